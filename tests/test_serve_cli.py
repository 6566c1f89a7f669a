"""`dflash-check serve`: golden commands for the bundled Qwen3-8B pair on every engine, each printed
command read back and checked by `dflash-check check` without errors, pairings an engine cannot
serve, hostile paths quoted, bad input.

Regenerate the goldens after an intended change with:
DFLASH_UPDATE_GOLDEN=1 python -m pytest tests/test_serve_cli.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.serve.pipeline import option_supported
from dflash_compat.serve.plan import ENGINES, OPTION_FLAGS, options_from_argv

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "serve"
PAIR = ("examples/qwen3-8b/target", "--draft", "examples/qwen3-8b/draft")
BAD_PAIR = ("examples/llama-with-qwen3-draft/target", "--draft", "examples/llama-with-qwen3-draft/draft")
# checker option -> the `dflash-check check` flag that sets it
CHECK_FLAGS = {"num_speculative_tokens": "--num-speculative-tokens", "sglang_num_draft_tokens": "--num-draft-tokens",
               "tp": "--tp", "draft_tp": "--draft-tp", "max_num_seqs": "--max-num-seqs",
               "max_num_batched_tokens": "--max-num-batched-tokens", "sglang_attn_dp_size": "--attn-dp-size",
               "sglang_enable_dp_lm_head": "--enable-dp-lm-head", "pp_size": "--pp-size",
               "sglang_dflash_block_size": "--dflash-block-size", "sglang_draft_window_size": "--draft-window-size",
               "sglang_quantization": "--quantization", "sglang_draft_quantization": "--draft-quantization",
               "llamacpp_draft_n_max": "--spec-draft-n-max"}


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # golden commands hold the relative example paths


def _run(*args):
    res = CliRunner(env={"COLUMNS": "80"}).invoke(cli, [str(a) for a in args])  # the width of a CI log
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
    argv = vllm["argv"]
    spec = {a.split(".", 1)[1]: argv[i + 1] for i, a in enumerate(argv) if a.startswith("--speculative-config.")}
    assert spec == {"method": "dflash", "model": "examples/qwen3-8b/draft", "num_speculative_tokens": "15"}
    assert options_from_argv("vllm", argv)["num_speculative_tokens"] == 15
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
    ("sglang", ("--attn-dp-size", 2, "--enable-dp-lm-head")), ("sglang", ("--pp-size", 1)),
    ("sglang", ("--dflash-block-size", 16, "--draft-window-size", 64)),
    ("sglang", ("--quantization", "fp8", "--draft-quantization", "unquant")),
    ("mlx", ()), ("transformers", ()), ("llama.cpp", ()), ("llama.cpp", ("--spec-draft-n-max", 5)),
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
        flags += [CHECK_FLAGS[name]] if value is True else [CHECK_FLAGS[name], value]
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
        doc = json.loads(_serve(engine, pair=pair).output)
        argvs = [*doc.get("prepare", []), doc["argv"]]  # llama.cpp converts the pair first
        assert any(str(evil / "target") in argv for argv in argvs)
        text = _serve(engine, pair=pair, fmt="text").output
        commands = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        commands = [c for c in re.split(r"(?<!\\)\n(?=[a-z])", commands) if c.strip()]
        assert len(commands) == len(argvs)
        for command, argv in zip(commands, argvs):
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


def test_every_serve_option_has_a_check_option_and_flag():
    """serve's options are check's (one table: deployment.options.OPTION_FLAGS), each a field the rules read."""
    assert CHECK_FLAGS.items() <= OPTION_FLAGS.items() and all(option_supported(name) for name in OPTION_FLAGS)
    check_flags = {opt for p in cli.commands["check"].params for opt in p.opts}
    assert set(OPTION_FLAGS.values()) <= check_flags


def test_an_option_the_rules_cannot_judge_is_refused_not_printed():
    from dflash_compat.exceptions import InputError
    from dflash_compat.serve.pipeline import PairRef, make_options

    with pytest.raises(InputError, match="--future-flag: this version's rules cannot check it yet"):
        make_options({"future_option": 3, "tp": 2}, PairRef("t", "d"), {"future_option": "--future-flag"})
    assert make_options({"tp": 2, "draft_tp": None}, PairRef("t", "d", deep=False)).tp == 2


@pytest.mark.parametrize("flags, exit_code", [
    (("--attn-dp-size", 2), 1),  # DFLASH with attention DP needs --enable-dp-lm-head (DF410)
    (("--attn-dp-size", 2, "--enable-dp-lm-head"), 0),
    (("--pp-size", 2), 1),  # DFLASH needs pp_size == 1 (DF411)
    (("--draft-window-size", 8), 1),  # the window must hold the block of 16 (DF413)
    (("--draft-window-size", 64), 0),
    (("--num-draft-tokens", 16, "--dflash-block-size", 8), 1),  # the two must agree (DF412)
    (("--dflash-block-size", 8), 0),  # serve sets both to 8: SGLang only logs the mismatch with the draft (DF401)
])
def test_sglang_options_are_judged_by_the_rules(flags, exit_code):
    """Every SGLang launch option serve prints is judged by the rules before the command is printed
    (speculative_hook.py:303-434): a command the engine would refuse exits 1 and prints no argv."""
    res = _serve("sglang", *flags)
    assert res.exit_code == exit_code, res.output
    payload = json.loads(res.output)
    if exit_code == 0:
        engine_flag = {"--attn-dp-size": "--attn-dp-size", "--draft-window-size": "--speculative-draft-window-size",
                       "--dflash-block-size": "--speculative-dflash-block-size"}
        assert engine_flag[flags[0]] in payload["argv"]
    else:
        assert payload["servable"] is False and payload["argv"] == []


def test_vllm_flags_follow_the_selected_release():
    """serve checks the vLLM line against the flags and --speculative-config keys the selected release's own
    parser declares: a key 0.34.0 dropped is refused there and printed for 0.33.0."""
    import pytest

    from dflash_compat.cli.commands.serve import _accepted_flags
    from dflash_compat.engines.registry import select_versions
    from dflash_compat.exceptions import InputError
    from dflash_compat.serve.plan import LaunchPlan, for_release

    plan = LaunchPlan("vllm", ["vllm", "serve", "t", "--speculative-config.method", "dflash",
                               "--speculative-config.disable_padded_drafter_batch", "true",
                               "--tensor-parallel-size", "1"])
    old = select_versions(option=("vllm==0.33.0",), installed=False)
    assert for_release(plan, _accepted_flags("vllm", old), "0.33.0").argv == plan.argv
    new = select_versions(option=("vllm==0.34.0",), installed=False)
    with pytest.raises(InputError, match="disable_padded_drafter_batch"):
        for_release(plan, _accepted_flags("vllm", new), "0.34.0")
    # a release older than the window is judged with the oldest bundled one's facts (as DF012 says)
    older = select_versions(option=("vllm==0.20.0",), installed=False)
    assert older.used("vllm") == "0.32.0"
    assert _accepted_flags("vllm", older) == _accepted_flags("vllm", select_versions(option=("vllm==0.32.0",),
                                                                                    installed=False))


def test_vllm_0_32_commands_are_checked():
    """serve checks a vLLM 0.32.0 line against 0.32.0's own parser (its frontend flags are in
    entrypoints/launchers/cli_args.py there): the command it prints passes; a flag 0.32.0 does not declare
    (`--monokernel`, from 0.33.0: vllm/engine/arg_utils.py:1842) is refused, not printed."""
    from dflash_compat.cli.commands.serve import _accepted_flags
    from dflash_compat.engines.registry import select_versions
    from dflash_compat.exceptions import InputError
    from dflash_compat.serve.plan import LaunchPlan, for_release

    res = _serve("vllm", "--engine-version", "vllm==0.32.0")
    assert res.exit_code == 0, res.output
    argv = json.loads(res.output)["argv"]
    assert argv[:2] == ["vllm", "serve"] and "--speculative-config.method" in argv
    accepted = _accepted_flags("vllm", select_versions(option=("vllm==0.32.0",), installed=False))
    assert accepted is not None and "--port" in accepted and "--speculative-config.num_speculative_tokens" in accepted
    assert for_release(LaunchPlan("vllm", argv), accepted, "0.32.0").argv == argv
    with pytest.raises(InputError, match="vLLM 0.32.0 does not accept --monokernel"):
        for_release(LaunchPlan("vllm", [*argv, "--monokernel"]), accepted, "0.32.0")
    with pytest.raises(InputError, match="xpress_topc"):
        for_release(LaunchPlan("vllm", [*argv, "--speculative-config.xpress_topc", "4"]), accepted, "0.32.0")
