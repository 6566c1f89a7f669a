"""`dflash-check smoke` on hostile model folders (issue 15): a draft shard index that points out of
the folder or at a non-file, and FIFOs where weights are expected. Every run ends in seconds with
exit 2 and one line. A FIFO blocks its reader forever -- inside safetensors' Rust code, holding the
GIL -- so the FIFO cases run smoke in a subprocess with a timeout: a regression fails the test
instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
LIMIT_S = 120  # start-up (torch / mlx imports) included, generous for a loaded CI machine; a hang is forever


def _args(target: Path, draft: Path, backend: str) -> list[str]:
    return ["smoke", str(target), "--draft", str(draft), "--backend", backend, "--prompt-ids", "1,2,3",
            "--max-new-tokens", "4"]


def _smoke(target: Path, draft: Path, backend: str):
    return CliRunner().invoke(cli, _args(target, draft, backend))


def _smoke_process(target: Path, draft: Path, backend: str):
    """smoke in its own process, killed after LIMIT_S (what a FIFO regression would need)."""
    try:
        cmd = [sys.executable, "-m", "dflash_compat", *_args(target, draft, backend)]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        return subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"smoke did not finish in {LIMIT_S} s: it blocked on a FIFO")


def _refused(res, *fragments: str) -> None:
    code = res.exit_code if hasattr(res, "exit_code") else res.returncode
    assert code == 2, res.stdout + res.stderr
    assert res.stderr.startswith("dflash-check: error: ") and res.stderr.count("\n") == 1, repr(res.stderr)
    assert "Traceback" not in res.stdout + res.stderr
    for fragment in fragments:
        assert fragment in res.stderr, res.stderr


def _index(draft: Path, wmap: dict) -> None:
    (draft / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))


# ---- the pairs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_pair(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from .tiny_dflash import draft_config, draft_state, save_draft, target_config, tiny_target

    root = tmp_path_factory.mktemp("hostile-torch")
    tiny_target(3, vocab=16).save_pretrained(str(root / "target"), safe_serialization=True)
    dcfg = draft_config(target_config(vocab=16), block_size=4, mask_token_id=15)
    save_draft(root / "draft", dcfg, draft_state(dcfg, 4))
    return root


@pytest.fixture(scope="module")
def mlx_pair(tmp_path_factory):
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from tests.mlx_models import build_target, draft_config, save_draft, save_target, target_config

    root = tmp_path_factory.mktemp("hostile-mlx")
    cfg = target_config("qwen3")
    save_target(root / "target", build_target(cfg, seed=1), cfg)
    save_draft(root / "draft", draft_config(cfg, block_size=4), seed=5)
    return root


def _pair(request, backend: str) -> Path:
    return request.getfixturevalue("torch_pair" if backend == "torch" else "mlx_pair")


def _copy(pair: Path, tmp_path: Path) -> tuple[Path, Path]:
    target, draft = tmp_path / "target", tmp_path / "draft"
    shutil.copytree(pair / "target", target)
    shutil.copytree(pair / "draft", draft)
    return target, draft


BACKENDS = ["torch", "mlx"]


# ---- the shard index ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_draft_index_pointing_out_of_the_folder_is_refused(request, tmp_path, backend):
    target, draft = _copy(_pair(request, backend), tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (draft / "model.safetensors").rename(outside / "x.safetensors")  # valid weights, out of the folder
    from safetensors import safe_open

    with safe_open(str(outside / "x.safetensors"), "np") as fh:
        names = list(fh.keys())
    _index(draft, {n: "../outside/x.safetensors" for n in names})
    _refused(_smoke(target, draft, backend), "shard name '../outside/x.safetensors' is not a file name")
    _index(draft, {n: "/etc/passwd" for n in names})
    _refused(_smoke(target, draft, backend), "'/etc/passwd' is not a file name")


@pytest.mark.parametrize("backend", BACKENDS)
def test_draft_index_with_a_non_string_file_is_one_line(request, tmp_path, backend):
    target, draft = _copy(_pair(request, backend), tmp_path)
    _index(draft, {"fc.weight": "model.safetensors", "norm.weight": 7})
    _refused(_smoke(target, draft, backend), "the file of 'norm.weight' is 7, not a file name")


# ---- FIFOs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_fifo_among_the_draft_weights_is_refused(request, tmp_path, backend):
    target, draft = _copy(_pair(request, backend), tmp_path)
    fifo = draft / "extra.safetensors"
    os.mkfifo(fifo)
    _refused(_smoke_process(target, draft, backend), "'extra.safetensors' is a FIFO, not a regular file")


def test_fifo_among_mlx_target_weights_is_refused(request, tmp_path):
    target, draft = _copy(request.getfixturevalue("mlx_pair"), tmp_path)
    fifo = target / "model-00001.safetensors"  # mlx-lm opens every model*.safetensors it finds
    os.mkfifo(fifo)
    _refused(_smoke_process(target, draft, "mlx"), "target", "'model-00001.safetensors' is a FIFO")


def test_fifo_beside_a_torch_target_is_refused(request, tmp_path):
    target, draft = _copy(request.getfixturevalue("torch_pair"), tmp_path)
    fifo = target / "tokenizer.json"  # tokenizers and transformers open files by name too
    os.mkfifo(fifo)
    _refused(_smoke_process(target, draft, "torch"), "'tokenizer.json' is a FIFO")
