"""Checkpoints (resumable) and the z-lab export, all in safetensors + JSON: nothing is pickled.

    OUT/config.json, OUT/model.safetensors     the trained draft (z-lab format; any DFlash loader)
    OUT/training.json                          settings, data, the loss / tau history
    OUT/checkpoint/model.safetensors           float32 weights
    OUT/checkpoint/optimizer.safetensors       AdamW moments, one tensor per parameter and moment
    OUT/checkpoint/state.json                  step, AdamW step counts, the draft's config, history

Every file is written through safe_write (atomic, a link in its place replaced itself, never followed)
into a folder `train` checked up front; a checkpoint is read back through safe_read (bounded JSON) and
the checked weight lookup's rules (regular files inside the folder). torch is imported by the
functions that need it, so that OUT can be checked before torch is imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from dflash_compat.exceptions import InputError, WeightsError, one_line

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["save_checkpoint", "load_checkpoint", "checkpoint_files", "export_draft", "write_json",
           "CHECKPOINT_DIR"]

CHECKPOINT_DIR = "checkpoint"
_FILES = ("state.json", "model.safetensors", "optimizer.safetensors")
MAX_STATE_BYTES = 256 * 1024 * 1024  # step counts and a loss history: KB to a few MB


def write_json(path: Path, value: Any) -> None:
    from dflash_compat.files.safe_write import write_output

    write_output(path, json.dumps(value, indent=2) + "\n", force=True)


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save

    from dflash_compat.files.safe_write import write_output

    data = save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata={"format": "pt"})
    write_output(path, data, force=True)


def save_checkpoint(out: Path, draft, optimizer: torch.optim.Optimizer, step: int, draft_config: dict,
                    history: list, global_batch: Optional[int] = None) -> None:
    """The draft's weights and AdamW state after `step` steps (one copy: rank 0 of a distributed run
    writes it; every rank holds the same draft and optimizer state, so it resumes on any number of ranks)."""
    from dflash_compat.files.safe_write import make_output_folder

    folder = make_output_folder(out / CHECKPOINT_DIR)
    names = {id(p): n for n, p in draft.named_parameters()}
    moments: dict[str, torch.Tensor] = {}
    adam_steps: dict[str, float] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state:
                continue
            name = names[id(p)]
            moments[f"{name}::exp_avg"] = state["exp_avg"]
            moments[f"{name}::exp_avg_sq"] = state["exp_avg_sq"]
            adam_steps[name] = float(state["step"])
    _save_tensors(folder / "model.safetensors", {k: v.float() for k, v in draft.state_dict().items()})
    _save_tensors(folder / "optimizer.safetensors", moments)
    write_json(folder / "state.json", {"step": step, "adam_steps": adam_steps, "draft_config": draft_config,
                                       "history": history, "global_batch": global_batch})


def checkpoint_files(out: Path) -> tuple[Path, Path, Path]:
    """OUT/checkpoint's (state.json, model.safetensors, optimizer.safetensors), checked without opening them:
    a real folder (never a link), regular files inside it. InputError / WeightsError in one line."""
    from dflash_compat.files.safe_read import is_regular_file
    from dflash_compat.files.weightfiles import refuse_link_out

    folder = out / CHECKPOINT_DIR
    if folder.is_symlink() or not (folder / "state.json").is_file():
        raise InputError(f"--resume: {folder} holds no checkpoint (state.json); train without --resume first")
    paths = tuple(folder / name for name in _FILES)
    for path in paths:
        try:
            refuse_link_out(path, folder)
        except WeightsError as exc:
            raise WeightsError(f"--resume: the checkpoint in {folder} is unusable ({exc})") from None
        if not is_regular_file(path):
            raise WeightsError(f"--resume: the checkpoint in {folder} is unusable ({path.name} is missing or not "
                               "a regular file)")
    return paths  # type: ignore[return-value]


def _read_state(path: Path) -> tuple[int, dict, dict, list]:
    """state.json -> (step, adam step counts, the draft's config, history), each of the type it must be."""
    from dflash_compat.files.safe_read import load_json_file

    state = load_json_file(path, what=f"--resume: {path}", error=WeightsError, limit=MAX_STATE_BYTES)
    if not isinstance(state, dict):
        raise WeightsError(f"--resume: {path} is not a checkpoint state (not a JSON object)")
    step, adam, config, history = (state.get("step"), state.get("adam_steps", {}), state.get("draft_config", {}),
                                   state.get("history", []))
    if not (isinstance(step, int) and step >= 0 and isinstance(adam, dict) and isinstance(config, dict)
            and isinstance(history, list) and all(isinstance(v, (int, float)) for v in adam.values())):
        raise WeightsError(f"--resume: {path} is not a checkpoint state (step, adam_steps, draft_config, history)")
    return step, adam, config, history


def load_checkpoint(out: Path, draft, optimizer: torch.optim.Optimizer) -> tuple[int, dict, list]:
    """Restore weights and optimizer in place; -> (step, the draft's config.json dict, history)."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    state_path, model_path, moments_path = checkpoint_files(out)
    step, adam_steps, draft_config, history = _read_state(state_path)
    try:
        weights = load_file(str(model_path))
        moments = load_file(str(moments_path))
    except (OSError, ValueError, SafetensorError) as exc:
        raise WeightsError(f"--resume: the checkpoint in {state_path.parent} is unreadable ({one_line(exc)})") from None
    expected = draft.state_dict()
    if {k: tuple(v.shape) for k, v in weights.items()} != {k: tuple(v.shape) for k, v in expected.items()}:
        raise InputError(f"--resume: the checkpoint in {state_path.parent} belongs to a different draft")
    names = dict(draft.named_parameters())
    restored = {}
    for name, count in adam_steps.items():
        p = names.get(name)
        avg, avg_sq = moments.get(f"{name}::exp_avg"), moments.get(f"{name}::exp_avg_sq")
        if p is None or avg is None or avg_sq is None or avg.shape != p.shape or avg_sq.shape != p.shape:
            raise WeightsError(f"--resume: the optimizer state in {state_path.parent} does not match the draft")
        restored[p] = {"step": torch.tensor(float(count)), "exp_avg": avg.to(p.device),
                       "exp_avg_sq": avg_sq.to(p.device)}
    draft.load_state_dict({k: v.to(expected[k].dtype) for k, v in weights.items()})
    optimizer.state.update(restored)
    return step, draft_config, list(history)


def export_draft(out: Path, draft, draft_config: dict, dtype: str) -> None:
    """The trained draft in z-lab format: config.json (torch_dtype set) + model.safetensors."""
    import torch

    config = dict(draft_config, torch_dtype=dtype)
    config.pop("dtype", None)
    target_dtype = getattr(torch, dtype)
    _save_tensors(out / "model.safetensors", {k: v.to(target_dtype) for k, v in draft.state_dict().items()})
    write_json(out / "config.json", config)


def saved_global_batch(out: Path) -> Optional[int]:
    """The global batch the checkpoint in OUT was trained with (None: unknown, an older checkpoint)."""
    state_path = out / CHECKPOINT_DIR / "state.json"
    try:
        value = _read_state_raw(state_path).get("global_batch")
    except (InputError, WeightsError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read_state_raw(path: Path) -> dict:
    from dflash_compat.files.safe_read import load_json_file

    state = load_json_file(path, what=f"--resume: {path}", error=WeightsError, limit=MAX_STATE_BYTES)
    return state if isinstance(state, dict) else {}
