"""The `dflash-check TARGET --draft DRAFT` command: exit codes, formats, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from tests.configs import draft, target, write_model

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "examples" / "qwen3-8b"
BAD = ROOT / "examples" / "llama-with-qwen3-draft"


def invoke(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_good_example_passes_every_backend():
    res = invoke(GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-f", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["summary"]["verdict"] == {b: "pass" for b in ("transformers", "dflash", "vllm", "sglang", "mlx",
                                                                "llama.cpp")}


def test_bad_example_fails_with_findings():
    res = invoke(BAD / "target", "--draft", BAD / "draft", "--no-deep", "-f", "json")
    assert res.exit_code == 1
    report = json.loads(res.output)
    codes = {f["code"] for f in report["findings"] if f["severity"] == "error"}
    assert "DF110" in codes or "DF104" in codes  # vocab / layer ids: the draft belongs to Qwen3
    assert all(v == "fail" for v in report["summary"]["verdict"].values())


def test_text_output_names_the_verdicts():
    res = invoke(BAD / "target", "--draft", BAD / "draft", "--no-deep")
    assert res.exit_code == 1
    assert "FAIL" in res.output and "fix:" in res.output


def test_backend_selection_limits_verdicts(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft())
    res = invoke(t, "--draft", d, "--no-deep", "-f", "json", "--backend", "vllm", "--backend", "mlx")
    assert res.exit_code == 0
    report = json.loads(res.output)
    assert report["backends"] == ["vllm", "mlx"]
    assert set(report["summary"]["verdict"]) == {"vllm", "mlx"}


def test_ignore_turns_a_failure_into_a_pass(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(hidden_size=2560))
    assert invoke(t, "--draft", d, "--no-deep").exit_code == 1
    res = invoke(t, "--draft", d, "--no-deep", "--ignore", "DF101", "-f", "json")
    assert res.exit_code == 0
    assert not [f for f in json.loads(res.output)["findings"] if f["code"] == "DF101"]


def test_select_by_prefix_runs_only_those_rules(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(hidden_size=2560))
    res = invoke(t, "--draft", d, "--no-deep", "--select", "DF1,DF3", "-f", "json")
    findings = json.loads(res.output)["findings"]
    assert findings and all(f["code"].startswith(("DF1", "DF3")) for f in findings)
    assert "DF101" in {f["code"] for f in findings}


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_a_pattern_matching_no_rule_is_an_input_error(tmp_path, flag):
    # `--select 101` (no DF prefix) would otherwise run nothing and pass
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(hidden_size=2560))
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep", flag, "101"])
    assert res.exit_code == 2 and "matches no rule code" in res.output


def test_strict_fails_on_warnings(tmp_path):
    # a mask token equal to an EOS id is a warning, not an error
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(**{"dflash_config.mask_token_id": 151645}))
    res = invoke(t, "--draft", d, "--no-deep", "-f", "json")
    report = json.loads(res.output)
    assert report["summary"]["errors"] == 0 and report["summary"]["warnings"] >= 1
    assert res.exit_code == 0
    assert invoke(t, "--draft", d, "--no-deep", "--strict").exit_code == 1


def test_output_file_is_written(tmp_path):
    out = tmp_path / "report.json"
    res = invoke(GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-f", "json", "-o", out)
    assert res.exit_code == 0 and res.output == ""
    assert json.loads(out.read_text())["schema_version"] == 1


def _write_text(folder: Path, content) -> Path:
    folder.mkdir()
    path = folder / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda p: p / "missing", "no such folder"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "no config.json"),
        (lambda p: _write_text(p / "j", "{not json"), "invalid JSON"),
        (lambda p: _write_text(p / "b", b"\xff\xfe\x00"), "not UTF-8"),
        (lambda p: write_model(p / "w", target(hidden_size="big")), "`hidden_size`"),
        (lambda p: write_model(p / "n", target(num_hidden_layers=-3)), "`num_hidden_layers`"),
        (lambda p: write_model(p / "a", target(vocab_size=10**12)), "`vocab_size`"),
        (lambda p: write_model(p / "l", [1, 2]), "not a JSON object"),
    ],
)
def test_bad_target_is_one_line_and_exit_2(tmp_path, make, needle):
    t = make(tmp_path)
    d = write_model(tmp_path / "d", draft())
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep"])
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_draft_that_is_not_dflash_is_rejected(tmp_path):
    t = write_model(tmp_path / "t", target())
    res = CliRunner().invoke(cli, [str(t), "--draft", str(t), "--no-deep"])
    assert res.exit_code == 2
    assert "no DFlash draft" in res.output


def test_draft_passed_as_target_is_rejected(tmp_path):
    d = write_model(tmp_path / "d", draft())
    res = CliRunner().invoke(cli, [str(d), "--draft", str(d), "--no-deep"])
    assert res.exit_code == 2
    assert "not a target" in res.output


def test_check_never_writes_into_model_folders(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft())
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file()}
    invoke(t, "--draft", d)
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file()}
    assert before == after


def test_unknown_rule_is_an_input_error():
    res = CliRunner().invoke(cli, ["rule", "DF999"])
    assert res.exit_code == 2 and "no rule" in res.output


def test_rule_command_prints_all_doc_sections():
    res = invoke("rule", "df101")
    for section in ("What it checks", "Why it matters", "Example", "How to fix"):
        assert section in res.output


def test_rule_command_lists_each_engine_source():
    """`rule DFxxx` ends with the engine code the verdict rests on: engine, release, file:line, what it decides."""
    from dflash_compat.rules import RULES_BY_CODE

    res = invoke("rule", "DF302", "--engine-version", "vllm==0.33.0")  # the lines of the release asked for
    assert res.exit_code == 0
    _, _, listed = res.output.partition("Engine sources\n")
    for src in RULES_BY_CODE["DF302"].sources:
        assert f"  vllm 0.33.0 {src.path}:{src.lines}\n" in listed and src.note in listed
    newest = invoke("rule", "DF302", "--engine-version", "vllm==0.34.0").output
    assert "vllm 0.34.0 vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:18-19" in newest  # moved in 0.34
    assert "vllm 0.34.0 vllm/v1/worker/gpu_model_runner.py: not in this release" in newest
    assert "Engine sources" not in invoke("rule", "DF006").output  # the checker's own inspection: no engine


def test_json_report_names_the_engine_releases_its_verdicts_rest_on():
    only_vllm = json.loads(invoke(GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-b", "vllm",
                                  "-f", "json").output)
    assert only_vllm["schema_version"] == 1
    assert {k: v["version"] for k, v in only_vllm["engines"].items()} == {"vllm": "0.34.0", "speculators": "0.9.0"}
    only_sglang = json.loads(invoke(GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-b", "sglang",
                                    "-f", "json").output)
    assert {k: v["version"] for k, v in only_sglang["engines"].items()} == {"sglang": "0.5.23"}


def test_sarif_rule_help_ends_with_the_engine_sources():
    doc = json.loads(invoke(BAD / "target", "--draft", BAD / "draft", "--no-deep", "-b", "vllm", "-f", "sarif").output)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    cited = [r for r in rules if r["id"].startswith("DF3")]
    assert cited, "the bad pair has vLLM findings"
    for rule in cited:
        help_text = rule["help"]["text"]
        assert "\n\nEngine sources:\n- vllm 0.34.0 vllm/" in help_text, rule["id"]
        assert all(f"- {cite}: " in help_text for cite in rule["properties"]["sources"])


def test_schema_lists_the_three_models():
    res = invoke("schema")
    schemas = json.loads(res.output)
    assert set(schemas) == {"draft", "target", "report"}
    assert "block_size" in schemas["draft"]["properties"]
    assert "findings" in schemas["report"]["properties"]


def test_junit_lists_only_the_selected_rules(tmp_path):
    from xml.etree import ElementTree as ET

    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(hidden_size=2560))
    res = invoke(t, "--draft", d, "--no-deep", "-f", "junit", "--select", "DF10", "--backend", "vllm")
    assert res.exit_code == 1
    root = ET.fromstring(res.output)
    names = [c.get("name") for c in root.iter("testcase")]
    assert names and all(n.startswith("DF10") for n in names)
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == ["DF101 hidden-size-mismatch"]


ODD_VALUES = [None, [], {}, True, 0, -1, "x", 1.5, [1, "a"], {"a": 1}]
ODD_KEYS = ["hidden_size", "num_hidden_layers", "vocab_size", "model_type", "architectures", "eos_token_id",
            "rope_theta", "rope_scaling", "layer_types", "sliding_window", "tie_word_embeddings",
            "quantization_config", "logits_scaling", "final_logit_softcapping", "text_config"]


@pytest.mark.parametrize("side", ["target", "draft"])
@pytest.mark.parametrize("key", ODD_KEYS + ["block_size", "dflash_config", "dflash_config.target_layer_ids",
                                            "dflash_config.mask_token_id", "num_target_layers"])
def test_odd_values_give_findings_or_one_line_never_a_traceback(tmp_path, side, key):
    for i, value in enumerate(ODD_VALUES):
        cfgs = {"target": target(), "draft": draft()}
        cfgs[side] = (target if side == "target" else draft)(**{key: value})
        t = write_model(tmp_path / f"t{i}", cfgs["target"])
        d = write_model(tmp_path / f"d{i}", cfgs["draft"])
        res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep", "-f", "json"])
        assert res.exception is None or isinstance(res.exception, SystemExit), (key, value, res.exception)
        assert res.exit_code in (0, 1, 2), (key, value)
        if res.exit_code == 2:
            assert len(res.output.strip().splitlines()) == 1, (key, value, res.output)
        else:
            json.loads(res.output)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["check"], "Missing argument 'TARGET'"),
        (["examples/qwen3-8b/target"], "Missing option '--draft'"),
        (["examples/qwen3-8b/target", "--draft", "x", "--tp", "0"], "--tp"),
        (["rules", "--format", "yaml"], "--format"),
    ],
)
def test_usage_errors_from_the_console_script_are_one_line(args, needle):
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, "-m", "dflash_compat", *args], capture_output=True, text=True,
                         cwd=root, timeout=60)
    assert res.returncode == 2
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize("exc", ["input", "usage"])
def test_an_error_with_an_empty_message_is_still_one_line(monkeypatch, exc):
    import click

    import dflash_compat.pipeline.check as check
    from dflash_compat.exceptions import InputError

    def fail_empty(req, rules=None):
        raise InputError("") if exc == "input" else click.UsageError("")

    monkeypatch.setattr(check, "run_check", fail_empty)
    res = CliRunner().invoke(cli, [str(GOOD / "target"), "--draft", str(GOOD / "draft"), "--no-deep"])
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit))
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error: ") and "(no message)" in lines[0]


def test_fail_turns_any_user_error_into_one_line(capsys):
    import click

    from dflash_compat.cli.app import fail
    from dflash_compat.exceptions import RemoteCodeError

    for exc, code in ((RemoteCodeError("two\nlines"), 2), (click.UsageError(""), 2), (click.BadParameter("x"), 2)):
        with pytest.raises(SystemExit) as stop:
            fail(exc)
        err = capsys.readouterr().err
        assert stop.value.code == code and len(err.strip().splitlines()) == 1, err


def test_check_options_become_one_request():
    from dflash_compat.cli.commands.check_options import build_request as _request

    params = dict(target="t", draft="d", backends=("mlx", "vllm"), select=("DF1,DF3",), ignore=(), strict=True,
                  num_speculative_tokens=7, num_draft_tokens=8, tp=2, draft_tp=1, max_num_seqs=None,
                  max_num_batched_tokens=None, dflash_block_size=8, draft_window_size=None, attn_dp_size=2,
                  enable_dp_lm_head=True, pp_size=1, quantization="fp8", draft_quantization="unquant",
                  revision=None, draft_revision="r", token=None, no_deep=True,
                  trust_remote_code=False, framework="mlx", adapter=None)
    req = _request(params)
    assert req.backends == ["vllm", "mlx"] and req.select == ["DF1", "DF3"] and req.strict
    assert req.options.sglang_num_draft_tokens == 8 and req.options.deep is False and req.framework == "mlx"
    o = req.options
    assert (o.sglang_dflash_block_size, o.sglang_attn_dp_size, o.sglang_enable_dp_lm_head) == (8, 2, True)
    assert (o.sglang_quantization, o.sglang_draft_quantization, o.pp_size) == ("fp8", "unquant", 1)
    with pytest.raises(Exception, match="--no-deep"):
        _request(dict(params, adapter="gpt2"))


def test_strict_is_recorded_in_the_report(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(**{"dflash_config.mask_token_id": 151645}))
    res = invoke(t, "--draft", d, "--no-deep", "--strict", "-f", "json")
    report = json.loads(res.output)
    assert res.exit_code == 1 and report["strict"] is True
    text = invoke(t, "--draft", d, "--no-deep", "--strict").output
    assert "FAIL (warnings, --strict)" in text


def test_sglang_launch_options_reach_the_rules():
    args = ("--no-deep", "-f", "json", "--backend", "sglang", "--attn-dp-size", "4", "--pp-size", "2",
            "--num-draft-tokens", "16", "--dflash-block-size", "15", "--draft-window-size", "8",
            "--quantization", "fp8")
    res = invoke(GOOD / "target", "--draft", GOOD / "draft", *args)
    codes = {f["code"] for f in json.loads(res.output)["findings"]}
    assert {"DF405", "DF410", "DF411", "DF412", "DF413"} <= codes and res.exit_code == 1
    ok = ("--attn-dp-size", "4", "--enable-dp-lm-head", "--draft-quantization", "unquant", "--quantization", "fp8")
    res = invoke(GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-f", "json", "--backend", "sglang", *ok)
    assert res.exit_code == 0 and not {"DF405", "DF410"} & {f["code"] for f in json.loads(res.output)["findings"]}


def test_attn_cp_size_and_draft_attention_backend_reach_the_sglang_rules():
    args = ("--no-deep", "-f", "json", "--backend", "sglang", "--attn-dp-size", "4", "--enable-dp-lm-head",
            "--attn-cp-size", "2", "--draft-attention-backend", "trtllm_mha")
    res = invoke(GOOD / "target", "--draft", GOOD / "draft", *args)
    found = {f["code"]: f for f in json.loads(res.output)["findings"]}
    assert "context parallel" in found["DF415"]["message"] and found["DF418"]["severity"] == "info"
    assert res.exit_code == 1


def test_num_speculative_tokens_reaches_the_vllm_rules():
    base = (GOOD / "target", "--draft", GOOD / "draft", "--no-deep", "-f", "json", "--backend", "vllm")
    codes = {f["code"] for f in json.loads(invoke(*base).output)["findings"]}
    assert "DF312" in codes  # no K given: the info naming the flag
    res = invoke(*base, "--num-speculative-tokens", "15", "--max-num-seqs", "256", "--max-num-batched-tokens", "2048")
    found = {f["code"]: f for f in json.loads(res.output)["findings"]}
    assert "DF312" not in found and found["DF304"]["severity"] == "warning" and res.exit_code == 0


@pytest.mark.parametrize(("typo", "command"), [("smoek", "smoke"), ("chek", "check"), ("adpat", "adapt"),
                                               ("rulse", "rules"), ("shcema", "schema"), ("Rules", "rules")])
def test_a_mistyped_command_is_named(typo, command, monkeypatch, capsys):
    from dflash_compat.cli.app import main

    monkeypatch.setattr("sys.argv", ["dflash-check", typo, "examples/qwen3-8b/target", "--draft", "x"])
    with pytest.raises(SystemExit) as exit_:
        main()  # the console script: usage errors are one line
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"dflash-check: error: no such command {typo!r}; did you mean {command!r}? (see `dflash-check --help`)"]


def test_a_folder_named_like_a_command_is_a_target(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_model(tmp_path / "smoek", target())
    d = write_model(tmp_path / "d", draft())
    res = CliRunner().invoke(cli, ["smoek", "--draft", str(d), "--no-deep", "-f", "json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("word", ["distilgpt2", "org/smoek", "./chek", "llama"])
def test_a_word_far_from_every_command_is_left_to_check(word):
    from dflash_compat.cli.commands.suggest import mistyped_command

    assert mistyped_command(word, ["check", "smoke", "adapt", "rules", "rule", "schema"]) is None

