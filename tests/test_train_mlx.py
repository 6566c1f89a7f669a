"""`train --framework mlx` (mlx[cpu] here): the PyTorch trainer's recipe and export on MLX.

- On the same batches and anchors (sampler.py) from the same starting weights, the MLX trainer's losses and
  per-step block tau equal the PyTorch trainer's: within 1e-5 relative, float32 both (measured: below 4e-7;
  the target runs in mlx-lm on one side and transformers on the other, so the features differ in the last
  bits).
- Its export runs losslessly in `dflash-check smoke --backend mlx`, with more than one token accepted per
  step after training.
- Its checkpoint resumes to the uninterrupted run's weights, bit for bit, and the PyTorch trainer's
  checkpoint resumes in MLX (one format).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.cli.app import cli  # noqa: E402
from dflash_compat.train import TrainConfig, prepare  # noqa: E402
from dflash_compat.train.loop import run_training  # noqa: E402
from dflash_compat.train.mlx_loop import prepare_mlx, run_training_mlx  # noqa: E402

from .test_train import VOCAB, _pair  # noqa: E402

REL_TOL = 1e-5
SETTINGS = dict(batch_size=4, seq_len=46, anchors=40, lr=3e-3, warmup=2, eval_every=3, export_dtype="float32",
                device="cpu", seed=2, eval_new_tokens=32)
quiet = lambda line: None  # noqa: E731


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The tiny pair, and a draft with seeded random weights both trainers start from."""
    root = tmp_path_factory.mktemp("mlx")
    target, _, data = _pair(root)
    res = CliRunner().invoke(cli, ["init-draft", str(target), "-o", str(root / "draft"), "--layers", "1",
                                   "--layer-ids", "1", "--block-size", "4", "--mask-token-id", str(VOCAB - 1),
                                   "--weights", "random"])
    assert res.exit_code == 0, res.output
    return root, target, root / "draft", data


def _torch(pair, out, steps, resume=False):
    root, target, draft, data = pair
    return run_training(prepare(str(target), str(draft), str(data), str(root / out),
                                TrainConfig(steps=steps, **SETTINGS), resume=resume), progress=False, log=quiet)


def _mlx(pair, out, steps, resume=False):
    root, target, draft, data = pair
    return run_training_mlx(prepare_mlx(str(target), str(draft), str(data), str(root / out),
                                        TrainConfig(steps=steps, **SETTINGS), resume=resume), log=quiet)


def test_mlx_losses_match_the_pytorch_trainer(pair):
    ours, theirs = _torch(pair, "torch6", 6), _mlx(pair, "mlx6", 6)
    for a, b in zip(ours.history, theirs.history, strict=True):
        assert abs(a["loss"] - b["loss"]) <= REL_TOL * abs(a["loss"]), (a, b)
        assert a["block_tau"] == b["block_tau"] and a["tau"] == b["tau"], (a, b)


def test_mlx_export_runs_lossless_in_mlx_smoke(pair):
    root, target, draft, data = pair
    session = prepare_mlx(str(target), str(draft), str(data), str(root / "mlx40"), TrainConfig(steps=60, **SETTINGS))
    result = run_training_mlx(session, log=quiet)
    assert result.history[-1]["loss"] < 0.6 * result.history[0]["loss"]
    ids = ",".join(map(str, session.prompts[0]))  # a held-out prompt
    config = json.loads((root / "mlx40" / "config.json").read_text())
    assert config["architectures"] == ["DFlashDraftModel"] and config["torch_dtype"] == "float32"
    res = CliRunner().invoke(cli, ["smoke", str(target), "--draft", str(root / "mlx40"), "--backend", "mlx",
                                   "--prompt-ids", ids, "--max-new-tokens", "32", "-f", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)["summary"]
    assert summary["lossless"] is True and summary["mean_acceptance"] > 1.2, summary
    assert (root / "mlx40" / "training.png").is_file()
    assert list((root / "mlx40" / "tensorboard").glob("events.out.tfevents.*"))


def test_mlx_resume_is_bit_identical_and_reads_a_torch_checkpoint(pair):
    root = pair[0]
    whole = _mlx(pair, "whole", 4)
    _mlx(pair, "split", 2)
    resumed = _mlx(pair, "split", 4, resume=True)
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in whole.history]
    assert (root / "split" / "model.safetensors").read_bytes() == (root / "whole" / "model.safetensors").read_bytes()
    # the PyTorch trainer's checkpoint after 2 steps, continued by MLX: the PyTorch curve goes on
    _torch(pair, "cross", 2)
    crossed = _mlx(pair, "cross", 4, resume=True)
    reference = _torch(pair, "torch4", 4)
    for a, b in zip(reference.history, crossed.history, strict=True):
        assert abs(a["loss"] - b["loss"]) <= REL_TOL * abs(a["loss"]), (a, b)


def test_mlx_refuses_what_it_does_not_do(pair):
    root, target, draft, data = pair
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(draft), "--data", str(data), "-o",
                                   str(root / "no"), "--framework", "mlx", "--regenerate"])
    assert res.exit_code == 2 and "one process" in res.output and len(res.output.strip().splitlines()) == 1
    assert not (root / "no").exists()
