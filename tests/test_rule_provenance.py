"""Provenance: every rule that speaks for an engine names the engine code it rests on, at a pinned version."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dflash_compat.contract import ENGINE_VERSIONS
from dflash_compat.engine import COMMON, EngineSource
from dflash_compat.rules import ALL_RULES

# Reports about dflash-check's own inspection (what it could not read): no engine behaviour to cite.
CHECKER_ONLY = {"DF006", "DF007"}
# Rules owned by the rules-serving branch that gets their sources; the lead empties this list on merge.
AWAITING_SOURCES = {
    "DF301", "DF302", "DF303", "DF304", "DF305", "DF306", "DF307", "DF308", "DF309", "DF310", "DF311", "DF351",
    "DF401", "DF402", "DF403", "DF404", "DF405", "DF606",
}
# The engines whose code can speak for each backend.
SPEAKS_FOR = {"transformers": {"dflash", "transformers"}, "mlx": {"dflash", "mlx-lm"},
              "vllm": {"vllm", "speculators"}, "sglang": {"sglang"}}
TOP_PACKAGE = {"vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx-lm": "mlx_lm",
               "transformers": "transformers", "speculators": "speculators"}


def _span(src: EngineSource) -> tuple[int, int]:
    first, _, last = src.lines.partition("-")
    return int(first), int(last or first)


def test_every_engine_rule_has_sources():
    missing = [r.code for r in ALL_RULES if not r.sources and r.code not in CHECKER_ONLY | AWAITING_SOURCES]
    assert missing == [], f"rules without engine sources: {missing}"
    stale = sorted(c for c in AWAITING_SOURCES if c in {r.code for r in ALL_RULES if r.sources})
    assert stale == [], f"these now have sources; drop them from AWAITING_SOURCES: {stale}"


def test_sources_are_well_formed():
    for rule in ALL_RULES:
        assert isinstance(rule.sources, tuple), rule.code
        for src in rule.sources:
            assert isinstance(src, EngineSource) and src.engine in ENGINE_VERSIONS, (rule.code, src)
            assert re.fullmatch(r"\d+(-\d+)?", src.lines), (rule.code, src)
            first, last = _span(src)
            assert 0 < first <= last, (rule.code, src)
            assert src.path.startswith(TOP_PACKAGE[src.engine] + "/") and src.path.endswith(".py"), (rule.code, src)
            assert src.note.strip(), (rule.code, src)
            assert src.cite() == f"{src.engine} {ENGINE_VERSIONS[src.engine]} {src.path}:{src.lines}"


def test_each_named_engine_is_backed_by_its_own_code():
    for rule in ALL_RULES:
        if not rule.sources:
            continue
        cited = {s.engine for s in rule.sources}
        for backend in rule.backends:
            if backend != COMMON:
                assert cited & SPEAKS_FOR[backend], f"{rule.code} speaks for {backend} but cites only {cited}"


# Where the engine wheels are unpacked (`pip download --no-deps NAME==VERSION` + unzip), if anywhere.
WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))


@pytest.mark.skipif(not WHEELS.is_dir(), reason="set DFLASH_ENGINE_SRC to the unpacked engine wheels")
def test_cited_lines_exist_in_the_engine_releases():
    """With DFLASH_ENGINE_SRC=/dir holding <package>-<version>/ trees (each wheel unzipped), every cited file
    exists at the pinned version and the cited range starts on a line of code inside it."""
    root = WHEELS
    for rule in ALL_RULES:
        for src in rule.sources:
            path = root / f"{TOP_PACKAGE[src.engine]}-{ENGINE_VERSIONS[src.engine]}" / src.path
            assert path.is_file(), f"{rule.code}: {src.cite()} (no {path})"
            lines = path.read_text(encoding="utf-8").splitlines()
            first, last = _span(src)
            assert last <= len(lines) and lines[first - 1].strip(), f"{rule.code}: {src.cite()} is out of range"
