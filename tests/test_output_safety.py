"""Outputs (`check -o`, `adapt -o`) never go through a symlink, over a foreign file, into a model folder,
or half-written (issue 15)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from tests.configs import draft, target, write_model


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    return write_model(tmp_path / "t", target()), write_model(tmp_path / "d", draft())


def check(t: Path, d: Path, *args: str):
    return CliRunner().invoke(cli, ["check", str(t), "--draft", str(d), "--no-deep", *map(str, args)])


def _one_line_error(res) -> str:
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_symlink_to_the_target_config_is_refused_and_the_config_kept(tmp_path):
    t, d = _pair(tmp_path)
    before = (t / "config.json").read_bytes()
    link = tmp_path / "report.json"
    link.symlink_to(t / "config.json")
    assert "symlink" in _one_line_error(check(t, d, "-f", "json", "-o", link))
    assert (t / "config.json").read_bytes() == before and link.is_symlink()


def test_force_replaces_the_link_itself_never_its_target(tmp_path):
    t, d = _pair(tmp_path)
    before = (t / "config.json").read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "report.json"
    link.symlink_to(victim)
    res = check(t, d, "-f", "json", "-o", link, "--force")
    assert res.exit_code == 0, res.output
    assert not link.is_symlink() and json.loads(link.read_text())["tool"]["name"] == "dflash-check"
    assert victim.read_text() == "keep" and (t / "config.json").read_bytes() == before


@pytest.mark.parametrize("inside", ["t/config.json", "t/report.json", "d/../d/report.json"])
def test_never_writes_inside_a_model_folder_even_with_force(tmp_path, inside):
    t, d = _pair(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    res = check(t, d, "-o", tmp_path / inside, "--force")
    assert "model folder" in _one_line_error(res)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_foreign_file_needs_force(tmp_path):
    t, d = _pair(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert "--force" in _one_line_error(check(t, d, "-o", notes))
    assert notes.read_text() == "my notes\n"
    assert check(t, d, "-o", notes, "--force").exit_code == 0
    assert notes.read_text().startswith("target ")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github"])
def test_a_previous_report_is_replaced_without_force(tmp_path, fmt):
    t, d = _pair(tmp_path)
    out = tmp_path / f"report.{fmt}"
    assert check(t, d, "-f", fmt, "-o", out).exit_code == 0
    first = out.read_text()
    out.chmod(0o640)
    assert check(t, d, "-f", fmt, "-o", out).exit_code == 0, "a report of ours is not recognised"
    assert out.read_text() == first
    assert (out.stat().st_mode & 0o777) == 0o640  # the replaced file's permissions are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", out.name, "t"]  # no temporary file left


def test_a_fifo_output_is_refused_without_blocking(tmp_path):
    t, d = _pair(tmp_path)
    fifo = tmp_path / "report.txt"
    os.mkfifo(fifo)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("res", check(t, d, "-o", fifo, "--force")),
                              daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # a regression: unblock the writer so the suite goes on
        with open(fifo, "rb") as fh:
            fh.read()
        pytest.fail("check -o FIFO blocked")
    assert "FIFO" in _one_line_error(result["res"])


def test_the_output_is_checked_before_the_work(tmp_path, monkeypatch):
    t, d = _pair(tmp_path)
    import dflash_compat.pipeline.check as check_module

    monkeypatch.setattr(check_module, "run_check", lambda req: pytest.fail("ran before refusing -o"))
    assert "does not exist" in _one_line_error(check(t, d, "-o", tmp_path / "nope" / "r.txt"))


def test_adapt_output_inside_the_target_folder_is_refused(tmp_path):
    t, _ = _pair(tmp_path)
    res = CliRunner().invoke(cli, ["adapt", str(t), "--framework", "mlx", "--map", "embed=model.embed_tokens",
                                   "--map", "layers=model.layers", "-o", str(t / "adapter.py"), "--force"])
    assert "model folder" in _one_line_error(res)
    assert not (t / "adapter.py").exists()


def test_adapt_refuses_a_symlinked_output(tmp_path):
    t, _ = _pair(tmp_path)
    link = tmp_path / "adapter.py"
    link.symlink_to(t / "config.json")
    before = (t / "config.json").read_bytes()
    res = CliRunner().invoke(cli, ["adapt", str(t), "--framework", "mlx", "--map", "embed=model.embed_tokens",
                                   "--map", "layers=model.layers", "-o", str(link)])
    assert "symlink" in _one_line_error(res)
    assert (t / "config.json").read_bytes() == before
