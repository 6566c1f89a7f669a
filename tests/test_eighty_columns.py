"""Every line the product prints fits 80 columns or wraps cleanly: each command's --help (walked over
click's tree, so commands added later are covered), the golden reports and serve scripts, the flag
lines of recommend and serve, one-line errors on a terminal, and the messages issue #23 found wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


def _commands(group: click.Command, path: tuple[str, ...] = ()):
    yield path, group
    if isinstance(group, click.Group):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            yield from _commands(group.get_command(ctx, name), (*path, name))


ALL = list(_commands(cli))


def test_the_walk_finds_the_known_commands():
    names = {" ".join(p) for p, _ in ALL}
    assert {"", "check", "serve", "smoke", "probe", "adapt", "recommend", "train", "init-draft"} <= names


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=lambda p: " ".join(p) or "dflash-check")
def test_every_help_fits_80_columns(path):
    res = CliRunner(env={"COLUMNS": "80"}).invoke(cli, [*path, "--help"])
    assert res.exit_code == 0, res.output
    wide = [line for line in res.output.splitlines() if len(line) > 80]
    assert not wide, f"{' '.join(path)} --help: {wide}"


# GitHub annotations are one line by format; Markdown is read rendered, not in a terminal
GOLDEN_TEXT = sorted(p for p in GOLDEN.rglob("*") if p.suffix in (".txt", ".sh")
                     and not p.name.endswith(".github.txt"))


@pytest.mark.parametrize("path", GOLDEN_TEXT, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_golden_outputs_fit_their_width(path):
    width = 120 if ".120." in path.name else 80
    lines = path.read_text().splitlines()
    wide = [line for line in lines if len(line) > width]
    assert not wide, wide


def test_golden_files_are_walked():
    names = {p.name for p in GOLDEN_TEXT}
    assert {"report.txt", "bad.txt", "bad.120.txt", "qwen3-8b.vllm.sh", "qwen3-8b.mlx.sh"} <= names


def test_recommend_flag_lines_wrap_at_80(tmp_path):
    from dflash_compat.liveprobe import profile as pf

    doc = pf.make_profile(source="smoke", engine="torch", block_size=8, per_position=[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
                          steps=100, mean_acceptance=4.2, convention="test")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    res = CliRunner(env={"COLUMNS": "80"}).invoke(
        cli, ["recommend", "--profile", str(tmp_path / "p.json"), "--draft", "z-lab/Qwen3-Coder-30B-A3B-DFlash-b16"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), [x for x in lines if len(x.rstrip()) > 80]
    start = next(i for i, x in enumerate(lines) if x.startswith("  vllm:"))
    joined = " ".join(x.strip().rstrip("\\").strip() for x in lines[start:start + 4])
    assert "--speculative-config.model z-lab/Qwen3-Coder-30B-A3B-DFlash-b16" in joined
    assert "--speculative-config.num_speculative_tokens 7" in joined


def test_serve_vllm_command_fits_and_reads_back_as_vllm_would():
    from dflash_compat.serve.plan import options_from_argv

    res = CliRunner(env={"COLUMNS": "80"}).invoke(
        cli, ["serve", "examples/qwen3-8b/target", "--draft", "examples/qwen3-8b/draft", "-e", "vllm", "--no-deep"])
    assert res.exit_code == 0, res.output
    assert max(len(line) for line in res.output.splitlines()) <= 80
    res = CliRunner().invoke(cli, ["serve", "examples/qwen3-8b/target", "--draft", "examples/qwen3-8b/draft",
                                   "-e", "vllm", "--no-deep", "-f", "json", "--num-speculative-tokens", "5"])
    assert options_from_argv("vllm", json.loads(res.output)["argv"])["num_speculative_tokens"] == 5


@pytest.mark.parametrize("name", ["1e5", "null", "true", "42", "[1]"])
def test_a_draft_name_json_would_change_keeps_the_json_form(name):
    """vLLM reads a dotted value with json.loads first (argparse_utils.py:476-485): `--speculative-config.model
    1e5` would become a float, so such a name keeps the one JSON argument."""
    from dflash_compat.serve.plan import options_from_argv, speculative_config_args

    args = speculative_config_args({"method": "dflash", "model": name, "num_speculative_tokens": 3})
    assert args[0] == "--speculative-config" and json.loads(args[1])["model"] == name
    assert options_from_argv("vllm", ["vllm", "serve", "t", *args])["num_speculative_tokens"] == 3


def test_errors_wrap_on_a_terminal_and_stay_one_line_in_a_pipe(monkeypatch):
    import io

    from dflash_compat import terminal as console

    line = "dflash-check: error: " + " ".join(["word"] * 40)
    assert console.error_text(line, io.StringIO()) == line  # a pipe, a CI log: one greppable line
    monkeypatch.setattr(console, "_isatty", lambda stream: True)
    monkeypatch.setenv("COLUMNS", "80")
    wrapped = console.error_text(line, io.StringIO()).splitlines()
    assert len(wrapped) > 1 and all(len(x) <= 80 for x in wrapped)
    assert all(x.startswith("    ") for x in wrapped[1:]) and " ".join(" ".join(wrapped).split()) == line


def test_recommend_plot_without_matplotlib_points_nowhere_above(tmp_path, monkeypatch):
    """Issue #23: it said "(the text histogram above needs nothing)" when nothing had been printed."""
    from dflash_compat.liveprobe import profile as pf

    doc = pf.make_profile(source="smoke", engine="torch", block_size=4, per_position=[0.9, 0.5, 0.2], steps=10,
                          mean_acceptance=2.0, convention="test")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    res = CliRunner().invoke(cli, ["recommend", "--profile", str(tmp_path / "p.json"), "--plot",
                                   str(tmp_path / "x.png")])
    assert res.exit_code == 2
    err = res.stderr if hasattr(res, "stderr") else res.output
    assert "matplotlib" in err and "above" not in err and "leave out --plot" in err
    assert not (tmp_path / "x.png").exists()


def test_adapt_may_replace_its_own_previous_output(tmp_path):
    """Issue #23: `adapt -o FILE` onto the shim it wrote said "not a previous dflash-check output"."""
    out = tmp_path / "adapter.py"
    target = str(ROOT / "examples" / "demo" / "target")
    first = CliRunner().invoke(cli, ["adapt", target, "-o", str(out)])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(cli, ["adapt", target, "-o", str(out)])
    assert again.exit_code == 0, again.output
    other = tmp_path / "mine.py"
    other.write_text('"""my own module"""\n')
    refused = CliRunner().invoke(cli, ["adapt", target, "-o", str(other)])
    assert refused.exit_code == 2 and other.read_text() == '"""my own module"""\n'


def test_framework_mlx_does_not_turn_vllm_verdict():
    """Issue #23: --framework mlx judged mlx-lm's tied head (embed_tokens.as_linear) as vLLM's (DF351)."""
    pytest.importorskip("mlx_lm")
    pair = [str(ROOT / "examples/demo/target"), "--draft", str(ROOT / "examples/demo/draft")]
    res = CliRunner().invoke(cli, [*pair, "--framework", "mlx", "-b", "vllm", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert "DF351" not in {f["code"] for f in doc["findings"]}
    (run,) = [r for r in doc["rules"] if r["code"] == "DF351"]  # not run, and the report says why
    assert run["status"] == "skipped" and "mlx-lm, not transformers" in run["reason"]
