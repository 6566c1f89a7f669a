"""The JSON / SARIF / JUnit / GitHub outputs are pinned by golden files.

Regenerate after an intended change with: DFLASH_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_reports.py
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli import cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = {
    "good": ("examples/qwen3-8b/target", "examples/qwen3-8b/draft"),
    "bad": ("examples/llama-with-qwen3-draft/target", "examples/llama-with-qwen3-draft/draft"),
}
EXT = {"json": "json", "sarif": "sarif.json", "junit": "junit.xml", "github": "github.txt"}


@pytest.mark.parametrize("fmt", sorted(EXT))
@pytest.mark.parametrize("case", sorted(CASES))
def test_report_matches_golden(case, fmt, monkeypatch):
    monkeypatch.chdir(ROOT)
    tgt, drf = CASES[case]
    res = CliRunner().invoke(cli, [tgt, "--draft", drf, "--no-deep", "-f", fmt], catch_exceptions=False)
    assert res.exit_code == (0 if case == "good" else 1)
    path = GOLDEN / f"{case}.{EXT[fmt]}"
    if os.environ.get("DFLASH_UPDATE_GOLDEN"):
        path.write_text(res.output)
    assert res.output == path.read_text(), f"{path.name} changed; see the module docstring to regenerate"


def test_json_report_shape():
    """The top-level keys and finding keys the issue fixes, independent of which rules fire."""
    report = json.loads((GOLDEN / "bad.json").read_text())
    assert list(report) == ["schema_version", "tool", "target", "draft", "backends", "findings", "summary"]
    assert report["schema_version"] == 1 and report["tool"]["name"] == "dflash-check"
    for key in ("source", "model_type", "architectures", "hidden_size", "num_hidden_layers", "vocab_size"):
        assert key in report["target"]
    for key in ("source", "format", "hidden_size", "block_size", "target_layer_ids", "mask_token_id"):
        assert key in report["draft"]
    assert report["backends"] == ["transformers", "vllm", "sglang", "mlx"]
    assert report["findings"], "the bad example must produce findings"
    for f in report["findings"]:
        assert list(f) == ["code", "name", "severity", "backend", "message", "fix", "locations"]
        assert f["severity"] in ("error", "warning", "info")
        for loc in f["locations"]:
            assert list(loc) == ["artifact", "file", "key"] and loc["artifact"] in ("target", "draft")
    assert list(report["summary"]) == ["errors", "warnings", "infos", "verdict"]
    order = {"error": 0, "warning": 1, "info": 2}
    keys = [(order[f["severity"]], f["code"], f["backend"]) for f in report["findings"]]
    assert keys == sorted(keys), "findings are sorted"
