"""Check and smoke give one answer: smoke refuses what the check fails with the same finding; where the check fails
a pair only for low acceptance (DF117, a RoPE base the draft was not trained with), `smoke --force` runs it anyway
and shows the measured acceptance (exit 1, the finding quoted)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from dflash_compat.cli.app import cli

PAIR = Path(__file__).resolve().parent.parent / "examples" / "tiny-qwen3"


def _rope_mismatch(tmp_path: Path) -> Path:
    root = tmp_path / "pair"
    shutil.copytree(PAIR, root)
    path = root / "draft" / "config.json"
    cfg = json.loads(path.read_text())
    cfg["rope_theta"] = 1_000_000.0  # the target keeps 10000: DF117
    path.write_text(json.dumps(cfg))
    return root


def _smoke(root: Path, *args: str):
    return CliRunner().invoke(cli, ["smoke", str(root / "target"), "--draft", str(root / "draft"), "--prompt-ids",
                                    "1,2,3,4", "--max-new-tokens", "8", "--device", "cpu", *args])


def test_check_and_smoke_refuse_a_rope_mismatch_with_the_same_finding(tmp_path):
    root = _rope_mismatch(tmp_path)
    check = CliRunner().invoke(cli, [str(root / "target"), "--draft", str(root / "draft"), "--no-deep", "-b", "dflash",
                                     "-f", "json"])
    assert check.exit_code == 1
    [finding] = [f for f in json.loads(check.output)["findings"] if f["severity"] == "error"]
    res = _smoke(root)
    assert res.exit_code == 2 and f"DF117 rope-theta-mismatch: {finding['message']}" in res.output


def test_force_runs_a_low_acceptance_pair_and_quotes_the_finding(tmp_path):
    res = _smoke(_rope_mismatch(tmp_path), "--force", "-f", "json")
    assert res.exit_code == 1
    out, err = res.stdout, res.stderr
    payload = json.loads(out)
    assert payload["summary"]["mean_acceptance"] >= 1.0 and payload["summary"]["lossless"] is True
    assert "ran anyway (--force); the check fails this pair: DF117 rope-theta-mismatch" in err


def test_force_does_not_run_a_pair_the_check_fails_for_more_than_acceptance(tmp_path):
    root = _rope_mismatch(tmp_path)
    path = root / "draft" / "config.json"
    cfg = json.loads(path.read_text())
    cfg["dflash_config"]["block_size"] = 1  # DF115: not an acceptance problem
    path.write_text(json.dumps(cfg))
    res = _smoke(root, "--force")
    assert res.exit_code == 2 and "DF115" in res.output
