"""Output for terminals and CI logs: every layout readable at 80 columns, words (config keys, paths)
never split, no ANSI in a pipe, NO_COLOR / FORCE_COLOR / TERM=dumb / COLUMNS honoured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.cli.console import color_enabled, make_console, render_smoke, terminal_width
from dflash_compat.rules import ALL_RULES
from tests.configs import draft, target, write_model

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "examples" / "llama-with-qwen3-draft"


def _invoke(args, columns: int = 80):
    return CliRunner(env={"COLUMNS": str(columns), "NO_COLOR": None, "FORCE_COLOR": None}).invoke(
        cli, [str(a) for a in args], catch_exceptions=False)


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_rules_is_one_line_per_rule_at_80_columns():
    res = _invoke(["rules"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    rows = [line for line in lines if line[:2] == "DF"]
    assert [row.split()[0] for row in rows] == [r.code for r in ALL_RULES]
    assert len(lines) <= len(ALL_RULES) + 5, "a compact list, not a table of wrapped cells"
    assert _widest(res.output) <= 80
    first = next(row for row in rows if row.startswith("DF101")).split()
    assert first == ["DF101", "error", "hidden-size-mismatch", "common"]
    assert "dflash-check rule DF101" in res.output


def test_rules_below_70_columns_is_still_one_entry_per_rule():
    res = _invoke(["rules"], columns=50)
    for line in res.output.splitlines():  # only a rule name too long for the rest of a line overflows it
        assert len(line) <= 50 or any(len(word) > 50 - 17 - 8 for word in line.split()), line
    assert sum(line[:2] == "DF" for line in res.output.splitlines()) == len(ALL_RULES)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_docs_wrap_at_words_at_80_columns(rule):
    res = _invoke(["rule", rule.code])
    assert res.exit_code == 0
    words = set(" ".join([rule.code, rule.name, rule.severity, *rule.backends, *rule.needs, rule.what, rule.why,
                          rule.example, rule.fix, "What it checks Why it matters Example How to fix",
                          "`dflash-check launch` only",
                          "Engine sources", *(f"{src.cite()} {src.note}" for src in rule.sources),
                          *(["Holds for not run at other releases."] if rule.versions else []),
                          *(f"{e}{spec}" for e, spec in rule.versions.items())]).split())
    for line in res.output.splitlines():
        if len(line.split()) > 1:
            assert len(line) <= 80, line
    # every word printed is a whole word of the docs: nothing was cut in the middle
    printed = {w.strip("(),;") for w in res.output.split()} - {"deep:"}
    assert printed <= {w.strip("(),;") for w in words}


def test_check_report_keeps_config_keys_whole_at_80_columns():
    res = _invoke([BAD / "target", "--draft", BAD / "draft", "--no-deep"])
    assert res.exit_code == 1
    assert "at draft:config.json:dflash_config.target_layer_ids" in res.output
    assert "draft:config.json:dflash_config.mask_token_id" in res.output
    assert _widest(res.output) <= 80


def test_columns_sets_the_width_of_a_piped_report():
    wide = _invoke([BAD / "target", "--draft", BAD / "draft", "--no-deep"], columns=200).output
    assert _widest(wide) > 100  # COLUMNS=200: paragraphs use the room
    assert terminal_width(open(os.devnull, "w")) == 80 or os.environ.get("COLUMNS")


def _smoke_payload(lossless=False):
    result = {"prompt_index": 0, "prompt_tokens": [1] * 12, "output_tokens": [1] * 64, "lossless": lossless,
              "mean_acceptance": 2.3456, "decode_tokens_per_s": 1234.56, "baseline_tokens_per_s": 456.7}
    return {"backend": "torch", "device": "cpu", "dtype": "float32", "block_size": 8, "temperature": 0.0,
            "results": [result, dict(result, prompt_index=1, lossless=True)],
            "summary": {"lossless": lossless, "mean_acceptance": 2.3456,
                        "histogram": {str(i): i for i in range(1, 17)}, "speedup": 2.7}}


@pytest.mark.parametrize("width", [80, 60, 40])
def test_smoke_shows_the_differing_token_and_tau_at_any_width(width, capsys):
    render_smoke(_smoke_payload(), make_console(width=width, no_color=True), divergence=[37, None],
                 min_acceptance=3.0)
    out = capsys.readouterr().out
    assert "token 37" in out and "2.35" in out and "1234.6" in out and "456.7" in out
    assert "under --min-acceptance 3.0" in out and "NOT lossless" in out
    assert _widest(out) <= width
    assert "\x1b" not in out


def test_smoke_at_80_columns_is_a_table():
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    render_smoke(_smoke_payload(), Console(file=buf, width=80, color_system=None), divergence=[37, None])
    header = buf.getvalue().splitlines()[1].split()
    assert header[:4] == ["prompt", "in", "out", "lossless"] and "tau" in header


class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize(("env", "tty", "expected"), [
    ({}, False, False),  # a pipe or a CI log
    ({}, True, True),
    ({"NO_COLOR": "1"}, True, False),
    ({"NO_COLOR": ""}, True, True),  # set but empty: no-color.org says it does not count
    ({"TERM": "dumb"}, True, False),
    ({"FORCE_COLOR": "1"}, False, True),
    ({"FORCE_COLOR": "0"}, False, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),  # NO_COLOR wins
])
def test_colour_policy(monkeypatch, env, tty, expected):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert color_enabled(_Stream(tty)) is expected


def _run_cli(args, env_extra, tty: bool) -> bytes:
    """The real console script with stdout on a pipe, or on a pseudo-terminal when `tty`."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM")}
    env.update(env_extra)
    cmd = [sys.executable, "-m", "dflash_compat", *map(str, args)]
    if not tty:
        return subprocess.run(cmd, capture_output=True, env=env, timeout=120, cwd=ROOT).stdout
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=follower, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower closed: the process is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ansi_only_on_a_terminal_end_to_end():
    args = [BAD / "target", "--draft", BAD / "draft", "--no-deep"]
    assert b"\x1b[" not in _run_cli(args, {}, tty=False)
    assert b"\x1b[" in _run_cli(args, {"FORCE_COLOR": "1"}, tty=False)
    assert b"\x1b[" in _run_cli(args, {"TERM": "xterm"}, tty=True)
    assert b"\x1b[" not in _run_cli(args, {"TERM": "xterm", "NO_COLOR": "1"}, tty=True)
    assert b"\x1b[" not in _run_cli(args, {"TERM": "dumb"}, tty=True)


def _warning_only_pair(tmp_path):
    """A pair whose only problem is a warning (DF108: the draft names another target depth, ids explicit)."""
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(num_target_layers=40))
    return t, d


def test_strict_shows_in_every_format_at_80_columns(tmp_path, monkeypatch):
    _warning_only_pair(tmp_path)
    monkeypatch.chdir(tmp_path)  # short paths: a temporary folder's own name may exceed 80 columns
    t, d = "t", "d"
    loose = _invoke([t, "--draft", d, "--no-deep"])
    assert loose.exit_code == 0 and "pass, with warnings" in loose.output
    text = _invoke([t, "--draft", d, "--no-deep", "--strict"])
    assert text.exit_code == 1 and _widest(text.output) <= 80
    assert "FAIL (warnings, --strict)" in text.output and "--strict: warnings fail" in text.output
    report = json.loads(_invoke([t, "--draft", d, "--no-deep", "--strict", "-f", "json"]).output)
    assert report["strict"] is True
    junit = ET.fromstring(_invoke([t, "--draft", d, "--no-deep", "--strict", "-f", "junit"]).output)
    assert int(junit.get("failures")) > 0
    loose_junit = ET.fromstring(_invoke([t, "--draft", d, "--no-deep", "-f", "junit"]).output)
    assert int(loose_junit.get("failures")) == 0
