"""The vLLM and SGLang rules (DF3xx, DF4xx) cite the engine lines their verdicts rest on."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dflash_compat.contract import ENGINE_VERSIONS
from dflash_compat.rules import ALL_RULES

SERVING = [r for r in ALL_RULES if r.code.startswith(("DF3", "DF4"))]
# Where the engine wheels are unpacked (`pip download --no-deps NAME==VERSION` + unzip), if anywhere.
WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))


@pytest.mark.parametrize("rule", SERVING, ids=lambda r: r.code)
def test_serving_rule_names_its_engine_sources(rule):
    engine = "vllm" if rule.code.startswith("DF3") else "sglang"
    assert rule.sources, f"{rule.code} states an engine behaviour without a source"
    assert any(s.engine == engine for s in rule.sources)
    for s in rule.sources:
        assert s.engine in ENGINE_VERSIONS and s.path.startswith(s.engine.replace("-", "_") + "/")
        assert re.fullmatch(r"\d+(-\d+)?", s.lines) and s.note, s
        assert s.cite() == f"{s.engine} {ENGINE_VERSIONS[s.engine]} {s.path}:{s.lines}"


@pytest.mark.parametrize("rule", SERVING, ids=lambda r: r.code)
def test_cited_lines_exist_in_the_unpacked_wheels(rule):
    """Catches a mistyped path or line range; needs the wheels unpacked under DFLASH_ENGINE_SRC."""
    for s in rule.sources:
        root = WHEELS / f"{s.engine}-{ENGINE_VERSIONS[s.engine]}"
        if not root.is_dir():
            pytest.skip(f"{root} is not unpacked here")
        path = root / s.path
        assert path.is_file(), s.cite()
        first, _, last = s.lines.partition("-")
        n_lines = len(path.read_text(encoding="utf-8").splitlines())
        assert 1 <= int(first) <= int(last or first) <= n_lines, s.cite()
