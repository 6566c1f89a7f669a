"""Issue #24: every reproduction of its table, one test each. Each of these inputs used to end in a
Python traceback with exit 1 (or was accepted when it should not be); now each is one stderr line
and exit 2 (or, where the input is valid, does what it says), and a crash is exit 3, never 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.exceptions import EXIT_INTERNAL

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"


def _run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def _one_line_exit_2(res, *needles):
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert "Traceback" not in res.output and res.exception is None or isinstance(res.exception, SystemExit)
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error: "), res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def pair(tmp_path):
    """The demo pair copied (its folders are never written to, but tests change files in copies)."""
    shutil.copytree(DEMO / "target", tmp_path / "T")
    shutil.copytree(DEMO / "draft", tmp_path / "D")
    return tmp_path / "T", tmp_path / "D"


# -- 1. a crash is exit 3 -----------------------------------------------------------------------------


def _crash(monkeypatch):
    from dflash_compat.liveprobe import profile

    def boom(path):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(profile, "read_profile", boom)


def test_an_internal_error_is_one_line_and_exit_3(monkeypatch, tmp_path):
    _crash(monkeypatch)
    monkeypatch.delenv("DFLASH_CHECK_DEBUG", raising=False)
    res = _run("recommend", "--profile", tmp_path / "p.json")
    assert res.exit_code == EXIT_INTERNAL == 3
    assert res.output == ("dflash-check: internal error in recommend: ZeroDivisionError: simulated bug; "
                          "rerun with --debug for the traceback\n")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_prints_the_traceback(monkeypatch, tmp_path, how):
    _crash(monkeypatch)
    args = ["recommend", "--profile", tmp_path / "p.json"]
    res = _run("--debug", *args) if how == "flag" else _run(*args, env={"DFLASH_CHECK_DEBUG": "1"})
    assert res.exit_code == 3
    assert "Traceback (most recent call last)" in res.output and "in boom" in res.output
    assert res.output.strip().splitlines()[-1] == "dflash-check: internal error in recommend: ZeroDivisionError: " \
                                                  "simulated bug"


def test_a_future_command_is_covered_by_the_group():
    """The guard lives in the CLI group's invoke: a command added tomorrow, raising anything, is exit 3
    with one line; one raising a DFlashCompatError is its own one line and code, with no import of cli."""
    import click

    from dflash_compat.cli.app import cli
    from dflash_compat.exceptions import InputError

    @click.command("tomorrow")
    @click.option("--how", type=click.Choice(("bug", "input")))
    def tomorrow(how):
        if how == "bug":
            raise KeyError("missing")
        raise InputError("--how input: bad")

    cli.add_command(tomorrow)
    try:
        bug = _run("tomorrow", "--how", "bug")
        assert bug.exit_code == 3 and bug.output == ("dflash-check: internal error in tomorrow: KeyError: 'missing'; "
                                                     "rerun with --debug for the traceback\n")
        _one_line_exit_2(_run("tomorrow", "--how", "input"), "--how input: bad")
    finally:
        cli.commands.pop("tomorrow")


def test_debug_before_the_default_check_command(tmp_path):
    res = _run("--debug", DEMO / "target", "--draft", DEMO / "draft", "--no-deep")
    assert res.exit_code == 0, res.output


def test_help_and_readme_list_exit_code_3():
    text = _run("--help").output
    assert "3  internal error" in text and "--debug" in text
    readme = (ROOT / "README.md").read_text()
    assert "**3** internal error" in readme and "--debug" in readme


# -- 2. seeds -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [10**30, 2**64, -(2**63) - 1])
@pytest.mark.parametrize("weights", ["random", "from-target"])
def test_init_draft_seed_out_of_torch_range(pair, tmp_path, seed, weights):
    target, _ = pair
    res = _run("init-draft", target, "-o", tmp_path / "out", "--layers", "1", "--block-size", "8", "--weights",
               weights, "--seed", seed)
    _one_line_exit_2(res, "--seed", "outside the seeds torch accepts")
    assert not (tmp_path / "out").exists()


def test_init_draft_seed_at_the_top_of_torch_range(pair, tmp_path):
    pytest.importorskip("torch")
    target, _ = pair
    res = _run("init-draft", target, "-o", tmp_path / "out", "--layers", "1", "--block-size", "8", "--weights",
               "random", "--seed", 2**64 - 1)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "model.safetensors").is_file()


@pytest.mark.parametrize("seed", [10**30, 2**64])
def test_train_seed_out_of_range(pair, tmp_path, seed):
    target, draft = pair
    data = tmp_path / "d.txt"
    data.write_text("hello world " * 50)
    res = _run("train", target, "-d", draft, "--data", data, "-o", tmp_path / "out", "--steps", "1", "--seed", seed)
    _one_line_exit_2(res, "--seed")


def test_train_seed_arithmetic_is_folded(tmp_path):
    """--seed 2**63 and ±2*10**13 are seeds torch takes, but seed * 1_000_003 + step overflowed it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from .test_train import _pair

    target, draft, data = _pair(tmp_path)
    for n, seed in enumerate((2**63, 2 * 10**13, -2 * 10**13)):
        res = _run("train", target, "-d", draft, "--data", data, "-o", tmp_path / f"out{n}", "--steps", "1",
                   "--batch-size", "1", "--seq-len", "16", "--anchors", "2", "--warmup", "0", "--eval-every", "0",
                   "--checkpoint-every", "0", "--seed", seed)
        assert res.exit_code == 0, (seed, res.output)


def test_fold_seed_matches_torch():
    torch = pytest.importorskip("torch")
    from dflash_compat.inputs import fold_seed

    for seed in (-1, -(2**63), 5):
        assert torch.Generator().manual_seed(seed).initial_seed() == fold_seed(seed)
    assert fold_seed(2**64) == 0 and fold_seed(2**64 - 1) == 2**64 - 1


# -- 2. texts -----------------------------------------------------------------------------------------


def test_train_jsonl_with_a_lone_surrogate(pair, tmp_path):
    target, draft = pair
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "fine"}\n{"text": "a \\ud800 b"}\n')
    res = _run("train", target, "-d", draft, "--data", data, "-o", tmp_path / "out", "--steps", "1")
    _one_line_exit_2(res, f"{data}:2", '"text"', "U+D800", "character 3")


def test_probe_prompts_with_a_lone_surrogate(pair, tmp_path):
    target, _ = pair
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"hello \\ud800 world"\n')
    res = _run("probe", "http://127.0.0.1:9", "-m", "M", "--prompts", prompts, "--reference", target)
    _one_line_exit_2(res, f"{prompts}:1", "U+D800")


@pytest.mark.parametrize("prompt, needle", [("hello \udced\udca0\udc80 world", "0xed at character 7"),
                                            ("\udcff", "0xff at character 1")])
def test_smoke_prompt_that_is_not_utf8(pair, prompt, needle):
    target, draft = pair
    res = _run("smoke", target, "-d", draft, "-p", prompt)
    _one_line_exit_2(res, "--prompt", needle)


# -- 2. numbers and URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309"])
def test_probe_timeout_not_finite(value):
    _one_line_exit_2(_run("probe", "http://127.0.0.1:9", "-m", "M", "--timeout", value), "--timeout")


@pytest.mark.parametrize("command", ["probe", "smoke"])
def test_min_acceptance_nan_is_refused(pair, command):
    target, draft = pair
    args = ["http://127.0.0.1:9", "-m", "M"] if command == "probe" else [target, "-d", draft]
    _one_line_exit_2(_run(command, *args, "--min-acceptance", "nan"), "--min-acceptance", "not a finite number")


@pytest.mark.parametrize("url, needle", [
    ("http://\udcff\udcfe:80", "not UTF-8"),
    ("http://" + "a" * 70 + ".example:80", "not a valid host name"),
    ("http://exa mple:80", "space or control character"),
    ("http://exa\u202emple:80", "U+202E"),
    ("http://x" + "y" * 3000, "more than the 2048"),
])
def test_probe_url_checked_before_any_connection(url, needle):
    _one_line_exit_2(_run("probe", url, "-m", "M"), "URL", needle)


# -- 2. files: recommend's profile, smoke's tokenizer, convert's verifier -----------------------------


def _profile(tmp_path, **changes):
    doc = {"schema_version": 1, "kind": "dflash-acceptance-profile", "source": "smoke", "engine": "torch",
           "block_size": 8, "steps": 10, "per_position_acceptance": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
           "mean_acceptance": 4.0, "convention": "c", "cost": None, "measured": {"block_size": 8, "speedup": 2.0}}
    for key, value in changes.items():
        if value is KeyError:
            doc.pop(key)
        elif key.startswith("measured."):
            doc["measured"][key.split(".", 1)[1]] = value
        else:
            doc[key] = value
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


@pytest.mark.parametrize("changes, field", [
    ({"mean_acceptance": "4"}, "mean_acceptance"),
    ({"mean_acceptance": None}, "mean_acceptance"),
    ({"mean_acceptance": [4]}, "mean_acceptance"),
    ({"mean_acceptance": KeyError}, "mean_acceptance"),
    ({"source": KeyError}, "source"),
    ({"engine": KeyError}, "engine"),
    ({"steps": KeyError}, "steps"),
    ({"block_size": KeyError}, "block_size"),
    ({"measured": []}, "measured"),
    ({"measured": "x"}, "measured"),
    ({"measured": {"other": 1}}, "measured.block_size"),
    ({"measured.speedup": "fast"}, "measured.speedup"),
    ({"measured.block_size": "eight"}, "measured.block_size"),
    ({"measured.block_size": float("nan")}, "measured.block_size"),
    ({"measured.block_size": float("inf")}, "measured.block_size"),
])
def test_recommend_profile_of_the_wrong_shape(tmp_path, changes, field):
    res = _run("recommend", "--profile", _profile(tmp_path, **changes))
    _one_line_exit_2(res, "--profile", f"`{field}`")


def test_recommend_valid_profile_still_works(tmp_path):
    res = _run("recommend", "--profile", _profile(tmp_path))
    assert res.exit_code == 0 and "recommended K" in res.output, res.output


@pytest.mark.parametrize("content, needle", [
    ("42", "expected a JSON object, got a number"),
    ('"hello"', "got a string"),
    ("null", "got null"),
    ("{}", "`model` should be a JSON object"),
    ("[" * 100_000, "nested more than"),
    ('{"a":' * 100_000, "nested more than"),
])
def test_smoke_hostile_tokenizer_json(pair, content, needle):
    target, draft = pair
    (target / "tokenizer.json").write_text(content)
    res = _run("smoke", target, "-d", draft, "-p", "hello")
    _one_line_exit_2(res, "tokenizer.json", needle)


def test_init_draft_layer_ids_ascii_digits_only(pair, tmp_path):
    target, _ = pair
    res = _run("init-draft", target, "-o", tmp_path / "out", "--layers", "2", "--layer-ids", "\u0661,\u0662")
    _one_line_exit_2(res, "--layer-ids", "ASCII digits")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("config", ["[]", '"x"', "3", '{"architectures": "LlamaForCausalLM"}'])
def test_convert_verifier_config_must_be_an_object(pair, tmp_path, config):
    _, draft = pair
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    (verifier / "config.json").write_text(config)
    res = _run("convert", draft, "--to", "speculators", "-o", tmp_path / "out", "--verifier", verifier)
    _one_line_exit_2(res, "--verifier")
    assert not (tmp_path / "out").exists()


# -- 3. nothing hostile reaches a printed command -----------------------------------------------------


@pytest.mark.parametrize("name", ["a\nrm -rf ~", "evil\u202eexe.txt", "x\u2066y", "z\u200fw", "q\x1b[31m"])
def test_serve_served_model_name_with_control_or_bidi(pair, name):
    target, draft = pair
    _one_line_exit_2(_run("serve", target, "-d", draft, "-e", "vllm", "--served-model-name", name),
                     "--served-model-name")


def test_serve_path_with_bidi_is_shown_escaped(tmp_path):
    odd = tmp_path / "tar\u202eget"
    shutil.copytree(DEMO / "target", odd)
    res = _run("serve", odd, "-d", DEMO / "draft", "-e", "vllm", "--no-deep")
    assert res.exit_code == 0, res.output
    assert "\u202e" not in res.output and "\\u202e" in res.output and "$'" in res.output


def test_shell_quote_round_trips_through_bash():
    import subprocess

    from dflash_compat.emitters._safe import shell_quote

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    for word in ("plain", "it's", "a\nb", "x\u202ey", "back\\slash'q", "\x1b[31m", "tab\there"):
        quoted = shell_quote(word)
        assert all(ch.isprintable() and ch not in "\u202e" for ch in quoted), quoted
        out = subprocess.run([bash, "-c", f"printf %s {quoted}"], capture_output=True, text=True).stdout
        assert out == word, (word, quoted, out)


def test_recommend_draft_name_is_escaped_in_the_flag_line(tmp_path):
    res = _run("recommend", "--profile", _profile(tmp_path), "--draft", "org/d\u202eraft")
    assert res.exit_code == 0 and "\u202e" not in res.output


# -- found by the option walker (tests/test_option_walker.py) -----------------------------------------


def test_convert_draft_name_too_long_for_the_file_system(tmp_path):
    line = _one_line_exit_2(_run("convert", "x" * 100_000, "--to", "speculators", "-o", tmp_path / "out"))
    assert len(line) < 1200  # the message is cut, still one line


def test_settings_file_value_with_a_nul_byte(tmp_path, monkeypatch):
    (tmp_path / "dflash-check.toml").write_text(
        f'target = "{DEMO / "target"}"\ndraft = "{DEMO / "draft"}"\nno-deep = true\noutput = "a\\u0000b"\n')
    monkeypatch.chdir(tmp_path)
    _one_line_exit_2(_run("check"), "output", "NUL")


@pytest.mark.parametrize("arg, needle", [("a\x00b", "NUL byte"), ("\ud800", "U+D800")])
def test_argument_no_real_command_line_can_hold(arg, needle):
    """In-process callers and settings files can pass what execve cannot; the console script's main
    refuses it for every command at once (one line, exit 2)."""
    from tests.fuzz.runner import _in_process

    code, _, stderr, error = _in_process(["init-draft", str(DEMO / "target"), "-o", arg], 60)
    assert error is None and code == 2, (code, stderr, error)
    assert stderr.count("\n") == 1 and "argument 4" in stderr and needle in stderr, stderr


def test_serve_prints_an_undecodable_byte_as_an_escape():
    """A revision holding a byte that is not UTF-8 (U+DCFF on a real command line) used to crash the
    echo (UnicodeEncodeError, exit 1); it is printed as $'...\\xff...', which bash turns back into the byte."""
    res = _run("serve", DEMO / "target", "-d", DEMO / "draft", "-e", "vllm", "--no-deep", "--revision", "a\udcffb")
    assert res.exit_code == 0, res.output
    assert "--revision $'a\\xffb'" in res.output


@pytest.mark.parametrize("option, value", [("--batch-size", 2**63), ("--seq-len", 2**63), ("--lr", "1e300"),
                                           ("--gamma", "1e-320")])
def test_train_sizes_no_machine_holds(pair, tmp_path, option, value):
    """Found by hand after the walker: each of these loaded the models, then crashed (OverflowError in
    torch.randint, MemoryError, AdamW overflow) or trained to a NaN loss; now refused at the option."""
    target, draft = pair
    data = tmp_path / "d.txt"
    data.write_text("hello world " * 50)
    res = _run("train", target, "-d", draft, "--data", data, "-o", tmp_path / "out", option, value)
    _one_line_exit_2(res, option)


def test_smoke_top_p_below_float32_and_seed_range(pair):
    """--top-p 1e-320 became 0 in float32 and masked every token (NaN probabilities, a crash after the
    models loaded); smoke's seed range is the runtimes' (0 to 2**63-1), named at the option."""
    target, draft = pair
    _one_line_exit_2(_run("smoke", target, "-d", draft, "--temperature", "1", "--top-p", "1e-320"), "--top-p")
    _one_line_exit_2(_run("smoke", target, "-d", draft, "--seed", str(2**64 - 1)), "--seed", "0 to 2**63-1")


def test_smoke_prompt_ids_ascii_digits_only(pair):
    target, draft = pair
    _one_line_exit_2(_run("smoke", target, "-d", draft, "--prompt-ids", "\u0661,\u0662"), "--prompt-ids",
                     "comma-separated")
