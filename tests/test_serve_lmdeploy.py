"""`serve --engine lmdeploy`: a checked `lmdeploy serve api_server` line whose every flag is in lmdeploy 0.18.0's
own parser (data/launch_flags.json), which `dflash-check launch` then finds and passes; a pair lmdeploy refuses
prints the findings instead."""

from __future__ import annotations

import json
import shlex

from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.engines.store import release
from dflash_compat.pipeline.launch import LaunchSettings, check_text
from tests.configs import draft, target


def pair(tmp_path, d):
    t, dd = tmp_path / "t", tmp_path / "d"
    for folder, cfg in ((t, target()), (dd, d)):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
    return t, dd


def test_a_servable_pair_prints_a_pytorch_backend_command_lmdeploy_parses(tmp_path):
    t, d = pair(tmp_path, draft(**{"dflash_config.block_size": 16}))
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "lmdeploy", "--no-deep", "-f",
                                   "json", "--port", "23334", "--tp", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    argv = doc["argv"]
    assert argv[:4] == ["lmdeploy", "serve", "api_server", str(t)]
    assert argv[argv.index("--backend") + 1] == "pytorch" and argv[argv.index("--speculative-algorithm") + 1] == "dflash"
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "15"
    accepted = release("lmdeploy", "0.18.0").flags["flags"]
    assert [a for a in argv if a.startswith("-") and a not in accepted] == []
    fr = check_text("serve.sh", shlex.join(argv) + "\n", LaunchSettings())
    [lr] = fr.launches
    assert lr.launch.engine == "lmdeploy" and [f.code for f in lr.report.findings] == [], lr.report.findings


def test_the_z_lab_layout_is_not_servable_and_says_why(tmp_path):
    t, d = pair(tmp_path, draft())
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "lmdeploy", "--no-deep"])
    assert res.exit_code == 1 and "DF453" in res.output and "lmdeploy serve" not in res.output


def test_options_of_other_engines_are_refused(tmp_path):
    t, d = pair(tmp_path, draft(**{"dflash_config.block_size": 16}))
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "lmdeploy", "--no-deep",
                                   "--attn-dp-size", "2"])
    assert res.exit_code == 2 and "not an option of `serve --engine lmdeploy`" in res.output


def test_the_printed_options_round_trip_through_check(tmp_path):
    from dflash_compat.serve.plan import options_from_argv
    from tests.test_serve_cli import CHECK_FLAGS

    t, d = pair(tmp_path, draft(**{"dflash_config.block_size": 16}))
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "lmdeploy", "--no-deep", "-f",
                                   "json", "--num-speculative-tokens", "7"])
    options = options_from_argv("lmdeploy", json.loads(res.output)["argv"])
    assert options == {"lmdeploy_num_draft_tokens": 7, "lmdeploy_backend": "pytorch", "lmdeploy_dtype": "bfloat16"}
    flags = [x for name, value in options.items() for x in (CHECK_FLAGS[name], str(value))]
    report = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--backend", "lmdeploy", "--no-deep", *flags])
    assert report.exit_code == 0, report.output


def test_not_servable_example_pair_prints_no_command():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "examples" / "qwen3-8b"
    res = CliRunner().invoke(cli, ["serve", str(root / "target"), "--draft", str(root / "draft"), "--engine",
                                   "lmdeploy", "--no-deep", "-f", "json"])
    doc = json.loads(res.output)
    assert res.exit_code == 1 and doc["servable"] is False and doc["argv"] == []
    assert {f["code"] for f in doc["findings"] if f["severity"] == "error"} == {"DF453"}
