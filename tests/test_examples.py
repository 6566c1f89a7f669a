"""The README's example commands work on the bundled examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli import cli

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "examples" / "tiny-qwen3"


def test_smoke_on_the_bundled_tiny_pair_is_lossless():
    pytest.importorskip("torch")
    res = CliRunner().invoke(
        cli,
        ["smoke", str(TINY / "target"), "--draft", str(TINY / "draft"), "--prompt", "w1 w2 w3 w4",
         "--max-new-tokens", "16", "--format", "json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["summary"]["lossless"] is True
    [result] = report["results"]
    assert len(result["output_tokens"]) == 16 and result["output_tokens"] == result["baseline_tokens"]


def test_deep_check_of_the_bundled_tiny_pair_reads_the_weights():
    pytest.importorskip("torch")
    res = CliRunner().invoke(cli, [str(TINY / "target"), "--draft", str(TINY / "draft"), "-f", "json"],
                             catch_exceptions=False)
    report = json.loads(res.output)
    assert report["draft"]["weights"]["checked"] is True
    assert report["target"]["layers_path"] == "model.layers"
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.slow
def test_make_tiny_pair_runs_from_an_install_and_rebuilds_the_bundled_pair(tmp_path):
    """The example imports only the installed package (no `tests.*`): run in isolated mode (-I) from
    another folder, it writes the same weights as the bundled pair."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    script = ROOT / "examples" / "make_tiny_pair.py"
    assert "tests" not in {line.split()[1].split(".")[0] for line in script.read_text().splitlines()
                           if line.startswith(("import ", "from "))}
    res = subprocess.run([sys.executable, "-I", str(script), str(tmp_path / "pair")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for name in ("draft/model.safetensors", "target/model.safetensors", "draft/config.json"):
        assert (tmp_path / "pair" / name).read_bytes() == (TINY / name).read_bytes(), name
