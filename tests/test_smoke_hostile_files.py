"""`dflash-check smoke` on hostile model folders (issue 15): a draft shard index that points out of
the folder or at a non-file, and FIFOs where weights are expected. Every run ends in seconds with
exit 2 and one line. A FIFO would block a reader forever, so each run happens in a thread that the
test can unblock (by opening the FIFO's write end) and fail, instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli import cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
LIMIT_S = 60  # generous for a loaded CI machine; a hang is forever


def _unblock(fifos: list[Path]) -> None:
    """Give every FIFO a writer that closes at once: a reader blocked in open() or read() gets EOF."""
    for fifo in fifos:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waiting


def _smoke(target: Path, draft: Path, backend: str, fifos: list[Path] = ()) -> "object":
    args = ["smoke", str(target), "--draft", str(draft), "--backend", backend, "--prompt-ids", "1,2,3",
            "--max-new-tokens", "4"]
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("res", CliRunner().invoke(cli, args)), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(LIMIT_S)
    if worker.is_alive():
        _unblock(list(fifos))
        worker.join(30)
        pytest.fail(f"smoke did not finish in {LIMIT_S} s: it blocked on a FIFO")
    res = box["res"]
    assert time.monotonic() - started < LIMIT_S
    return res


def _refused(res, *fragments: str) -> None:
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("dflash-check: error: ") and res.stderr.count("\n") == 1, repr(res.stderr)
    assert "Traceback" not in res.output
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
    _refused(_smoke(target, draft, backend, [fifo]), "'extra.safetensors' is a FIFO, not a regular file")


def test_fifo_among_mlx_target_weights_is_refused(request, tmp_path):
    target, draft = _copy(request.getfixturevalue("mlx_pair"), tmp_path)
    fifo = target / "model-00001.safetensors"  # mlx-lm opens every model*.safetensors it finds
    os.mkfifo(fifo)
    _refused(_smoke(target, draft, "mlx", [fifo]), "target", "'model-00001.safetensors' is a FIFO")


def test_fifo_beside_a_torch_target_is_refused(request, tmp_path):
    target, draft = _copy(request.getfixturevalue("torch_pair"), tmp_path)
    fifo = target / "tokenizer.json"  # tokenizers and transformers open files by name too
    os.mkfifo(fifo)
    _refused(_smoke(target, draft, "torch", [fifo]), "'tokenizer.json' is a FIFO")
