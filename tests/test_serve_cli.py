"""`dflash-check serve`: golden commands for the bundled Qwen3-8B pair on every engine, each printed
command read back and checked by `dflash-check check` without errors, pairings an engine cannot
serve, hostile paths quoted, bad input.

Regenerate the goldens after an intended change with:
DFLASH_UPDATE_GOLDEN=1 python -m pytest tests/test_serve_cli.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli import cli
from dflash_compat.serving.launch import ENGINES, options_from_argv
from dflash_compat.serving.pipeline import option_supported

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "serve"
PAIR = ("examples/qwen3-8b/target", "--draft", "examples/qwen3-8b/draft")
BAD_PAIR = ("examples/llama-with-qwen3-draft/target", "--draft", "examples/llama-with-qwen3-draft/draft")
# checker option -> the `dflash-check check` flag that sets it
CHECK_FLAGS = {"num_speculative_tokens": "--num-speculative-tokens", "sglang_num_draft_tokens": "--num-draft-tokens",
               "tp": "--tp", "draft_tp": "--draft-tp", "max_num_seqs": "--max-num-seqs",
               "max_num_batched_tokens": "--max-num-batched-tokens"}


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # golden commands hold the relative example paths


def _run(*args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _serve(engine, *extra, pair=PAIR, fmt="json"):
    return _run("serve", *pair, "--engine", engine, "--no-deep", "-f", fmt, *extra)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_golden_commands_for_the_qwen3_8b_pair(engine, fmt):
    res = _serve(engine, fmt=fmt)
    assert res.exit_code == 0, res.output
    path = GOLDEN / f"qwen3-8b.{engine}.{'sh' if fmt == 'text' else 'json'}"
    if os.environ.get("DFLASH_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(res.output)
    assert res.output == path.read_text(), f"{path.name} changed; see the module docstring to regenerate"


def test_derived_values():
    vllm = json.loads(_serve("vllm").output)
    spec = json.loads(vllm["argv"][vllm["argv"].index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "model": "examples/qwen3-8b/draft", "num_speculative_tokens": 15}
    assert vllm["argv"][vllm["argv"].index("--max-num-batched-tokens") + 1] == str(256 * 16)
    sglang = json.loads(_serve("sglang", "--tp", 2, "--max-num-seqs", 32).output)["argv"]
    assert sglang[sglang.index("--speculative-num-draft-tokens") + 1] == "16"  # anchor included
    assert sglang[sglang.index("--tp-size") + 1] == "2" and sglang[sglang.index("--max-running-requests") + 1] == "32"
    # a given budget sets the concurrency that fits it: 8192 // (15 + 1)
    budget = json.loads(_serve("vllm", "--max-num-batched-tokens", 8192).output)["argv"]
    assert budget[budget.index("--max-num-seqs") + 1] == "512"


ROUND_TRIPS = [
    ("vllm", ()), ("vllm", ("--tp", 4)), ("vllm", ("--tp", 8, "--draft-tp", 1)), ("vllm", ("--max-num-seqs", 64)),
    ("vllm", ("--max-num-batched-tokens", 8192)), ("vllm", ("--num-speculative-tokens", 7)),
    ("vllm", ("--served-model-name", "qwen", "--port", 8001)),
    ("sglang", ()), ("sglang", ("--tp", 2)), ("sglang", ("--max-num-seqs", 32)), ("sglang", ("--num-draft-tokens", 16)),
    ("mlx", ()), ("transformers", ()),
]


@pytest.mark.parametrize("engine, extra", ROUND_TRIPS, ids=[f"{e}-{'-'.join(map(str, x)) or 'default'}" for e, x in ROUND_TRIPS])
def test_every_printed_command_round_trips_through_the_checker(engine, extra):
    """Parse the printed argv back into checker options and run `dflash-check check` with them."""
    res = _serve(engine, *extra)
    assert res.exit_code == 0, res.output
    options = options_from_argv(engine, json.loads(res.output)["argv"])
    flags = []
    for name, value in options.items():
        if value is None:
            continue
        assert name in CHECK_FLAGS, f"{name}: no `check` flag for it yet"
        flags += [CHECK_FLAGS[name], value]
    report = _run(*PAIR, "--backend", engine, "--no-deep", "-f", "json", *flags)
    assert report.exit_code == 0, report.output
    summary = json.loads(report.output)["summary"]
    assert summary["errors"] == 0 and summary["verdict"][engine] != "fail"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_deep_checks_pass_too(engine):
    pytest.importorskip("torch")
    res = _run("serve", *PAIR, "--engine", engine, "-f", "json")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("engine, extra, code", [
    ("vllm", (), "DF104"), ("sglang", (), "DF110"), ("mlx", (), "DF117"),
])
def test_unservable_pairing_exits_1_with_the_reason(engine, extra, code):
    res = _serve(engine, *extra, pair=BAD_PAIR, fmt="text")
    assert res.exit_code == 1
    assert f"cannot be served on {engine}" in res.output and code in res.output
    assert not [line for line in res.output.splitlines() if not line.startswith("#")]  # no command printed


@pytest.mark.parametrize("extra, code", [
    (("--tp", 4, "--draft-tp", 2), "DF307"),
    (("--tp", 3), "DF307"),
    (("--num-speculative-tokens", 16), "DF303"),
])
def test_engine_specific_refusals(extra, code):
    res = _serve("vllm", *extra)
    assert res.exit_code == 1
    payload = json.loads(res.output)
    assert payload["servable"] is False and payload["argv"] == []
    assert code in {f["code"] for f in payload["findings"] if f["severity"] == "error"}


def test_hostile_paths_stay_single_arguments(tmp_path):
    """A folder name with quotes, `;`, `$(...)` and a newline is passed to the shell as one argument."""
    evil = tmp_path / "x'; touch pwned; echo $(touch pwned2) \"\n"
    for role in ("target", "draft"):
        shutil.copytree(ROOT / "examples/qwen3-8b" / role, evil / role)
    for engine in ENGINES:
        pair = (evil / "target", "--draft", evil / "draft")
        argv = json.loads(_serve(engine, pair=pair).output)["argv"]
        assert str(evil / "target") in argv
        text = _serve(engine, pair=pair, fmt="text").output
        command = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        # run the printed command with its program replaced by printf: the shell's own word splitting
        script = "printf '%s\\0' " + command
        out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.decode().split("\0")[:-1] == argv
        assert not list(tmp_path.glob("pwned*"))


@pytest.mark.parametrize("engine, extra, message", [
    ("vllm", ("--prompt", "hi"), "--prompt: not an option of `serve --engine vllm`"),
    ("mlx", ("--tp", 2), "--tp: not an option"),
    ("sglang", ("--draft-tp", 1), "--draft-tp: not an option"),
    ("vllm", ("--num-draft-tokens", 16), "--num-draft-tokens: not an option"),
    ("vllm", ("--quantization", "fp8"), "--quantization: not an option"),
    ("transformers", ("--revision", "abc"), "takes no revision"),
])
def test_bad_input_is_one_line_exit_2(engine, extra, message):
    res = _serve(engine, *extra)
    assert res.exit_code == 2 and message in res.output and res.output.count("\n") == 1


def test_missing_draft_is_exit_2():
    res = _run("serve", "examples/qwen3-8b/target", "--draft", "nowhere/at-all/x", "--engine", "vllm", "--no-deep")
    assert res.exit_code == 2 and res.output.startswith("dflash-check: error:")


@pytest.mark.parametrize("flags, field, when_checked", [
    (("--attn-dp-size", 2), "sglang_attn_dp_size", 1),  # DFLASH with attention DP needs --enable-dp-lm-head
    (("--attn-dp-size", 2, "--enable-dp-lm-head"), "sglang_attn_dp_size", 0),
    (("--pp-size", 2), "pp_size", 1),  # DFLASH needs pp_size == 1
    (("--draft-window-size", 8), "sglang_draft_window_size", 1),  # the window must hold the block (16)
    (("--draft-window-size", 64), "sglang_draft_window_size", 0),
])
def test_sglang_options_are_checked_or_refused(flags, field, when_checked):
    """Before the rules that judge an SGLang option exist, serve refuses it (exit 2) instead of printing
    an unchecked command; with them, the command is judged like any other (speculative_hook.py:303-434)."""
    res = _serve("sglang", *flags)
    if option_supported(field):
        assert res.exit_code == when_checked, res.output
        if when_checked == 0:
            engine_flag = {"--attn-dp-size": "--attn-dp-size", "--draft-window-size": "--speculative-draft-window-size"}
            assert engine_flag[flags[0]] in json.loads(res.output)["argv"]
    else:
        assert res.exit_code == 2 and "cannot check it yet" in res.output
