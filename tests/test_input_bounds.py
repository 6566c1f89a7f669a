"""Files the user names or a model folder holds are read with bounds: regular files only (a FIFO or a
device never blocks), a size cap, JSON nesting and integer caps; a shim is imported without writing
bytecode. Each ends in one line and exit 2, or in a report, never in a traceback (issues 12, 15)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.configs import QWEN3_8B, draft, target, write_model


def run(*args, cwd: Path, timeout: float = 60):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "dflash_compat", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def one_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout[-500:], res.stderr[-3000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    return lines[0]


def _raw_target(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "config.json").write_text(text)
    return folder


@pytest.mark.parametrize("deep", [False, True])
def test_deeply_nested_target_config_is_one_line(tmp_path, deep):
    t = _raw_target(tmp_path, '{"model_type": "qwen3", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    d = write_model(tmp_path / "d", draft())
    assert "nested" in one_line(run(t, "--draft", d, *([] if deep else ["--no-deep"]), cwd=tmp_path))


def test_nesting_deep_enough_for_pydantic_but_not_json_is_one_line(tmp_path):
    # 300 levels: json parses it; pydantic's serializer ("Maximum serialization depth") and
    # transformers' deepcopy would fail later in the deep check
    t = _raw_target(tmp_path, json.dumps(QWEN3_8B)[:-1] + ', "extra": ' + "[" * 300 + "]" * 300 + "}")
    d = write_model(tmp_path / "d", draft())
    assert "nested" in one_line(run(t, "--draft", d, cwd=tmp_path))


def test_deeply_nested_draft_config_is_one_line(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = tmp_path / "d"
    d.mkdir()
    (d / "config.json").write_text('{"block_size": 16, "x": ' + "{\"a\": " * 50_000 + "1" + "}" * 50_000 + "}")
    assert "nested" in one_line(run(t, "--draft", d, "--no-deep", cwd=tmp_path))


def test_integers_wider_than_64_bits_are_one_line(tmp_path):
    t = _raw_target(tmp_path, json.dumps(QWEN3_8B)[:-1] + ', "rope_theta": 1' + "0" * 300 + "}")
    d = write_model(tmp_path / "d", draft())
    assert "digits" in one_line(run(t, "--draft", d, cwd=tmp_path))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "sparse-65MiB"])
def test_a_config_that_is_not_a_small_regular_file_is_one_line(tmp_path, kind):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft())
    cfg = t / "config.json"
    cfg.unlink()
    if kind == "fifo":
        os.mkfifo(cfg)
    elif kind == "dev-zero":
        cfg.symlink_to("/dev/zero")
    elif kind == "folder":
        cfg.mkdir()
    else:
        with open(cfg, "wb") as fh:
            fh.truncate(65 * 1024 * 1024)
    line = one_line(run(t, "--draft", d, "--no-deep", cwd=tmp_path, timeout=30))
    assert "config.json" in line


def test_a_fifo_generation_config_is_skipped_not_waited_on(tmp_path):
    t = write_model(tmp_path / "t", target())
    os.mkfifo(t / "generation_config.json")
    d = write_model(tmp_path / "d", draft())
    res = run(t, "--draft", d, "--no-deep", cwd=tmp_path, timeout=30)
    assert res.returncode in (0, 1) and res.stdout.startswith("target "), res.stderr


@pytest.mark.parametrize("locked", ["folder", "config"])
def test_an_unreadable_model_is_one_line(tmp_path, monkeypatch, locked):
    """chmod 000 on the folder (or its config.json), as a user other than root sees it: the tests run as
    root, who reads everything, so the OS calls answer EACCES for those paths instead."""
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    t, d = write_model(tmp_path / "t", target()), write_model(tmp_path / "d", draft())
    denied = (lambda p: p.startswith(f"{t}{os.sep}")) if locked == "folder" else (lambda p: p == f"{t / 'config.json'}")

    def guard(fn):
        def call(path, *args, **kw):
            if not isinstance(path, int) and denied(os.path.abspath(os.fspath(path))):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return fn(path, *args, **kw)
        return call

    for name in ("stat", "lstat", "open") if locked == "folder" else ("open",):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    res = CliRunner().invoke(cli, ["check", str(t), "--draft", str(d), "--no-deep"])
    assert res.exit_code == 2, (res.exception, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Permission denied" in lines[0], res.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_map_file_reads_are_bounded(tmp_path, kind):
    t = write_model(tmp_path / "t", target())
    path = tmp_path / "map.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    line = one_line(run("adapt", t, "--framework", "mlx", "--map-file", path, cwd=tmp_path, timeout=30))
    assert "--map-file" in line and ("FIFO" in line or "device" in line)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def test_a_shim_in_the_model_folder_is_imported_without_writing_bytecode(tmp_path, monkeypatch):
    from dflash_compat.adapters.loading import load_shim_file
    from dflash_compat.adapters.shim import ShimPlan, render_shim

    model = write_model(tmp_path / "t", target())
    (model / "adapter.py").write_text(render_shim(ShimPlan("torch", {"embed": "model.embed_tokens",
                                                                     "layers": "model.layers"})))
    before = _tree(model)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as on a machine without PYTHONDONTWRITEBYTECODE
    module = load_shim_file(str(model / "adapter.py"))
    assert callable(module.wrap)
    assert _tree(model) == before, "the model folder changed (a __pycache__?)"
