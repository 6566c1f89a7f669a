"""Checkpoints (resumable) and the z-lab export, all in safetensors + JSON: nothing is pickled.

    OUT/config.json, OUT/model.safetensors     the trained draft (z-lab format; any DFlash loader)
    OUT/training.json                          settings, data, the loss / tau history
    OUT/checkpoint/model.safetensors           float32 weights
    OUT/checkpoint/optimizer.safetensors       AdamW moments, one tensor per parameter and moment
    OUT/checkpoint/state.json                  step, AdamW step counts, the draft's config, history
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from ..exceptions import InputError, WeightsError, one_line

__all__ = ["save_checkpoint", "load_checkpoint", "export_draft", "write_json", "CHECKPOINT_DIR"]

CHECKPOINT_DIR = "checkpoint"


def _write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # a crash mid-write never leaves a half file under the real name


def write_json(path: Path, value: Any) -> None:
    _write_bytes(path, (json.dumps(value, indent=2) + "\n").encode())


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save

    _write_bytes(path, save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata={"format": "pt"}))


def save_checkpoint(out: Path, draft, optimizer: torch.optim.Optimizer, step: int, draft_config: dict,
                    history: list) -> None:
    folder = out / CHECKPOINT_DIR
    folder.mkdir(parents=True, exist_ok=True)
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
                                       "history": history})


def load_checkpoint(out: Path, draft, optimizer: torch.optim.Optimizer) -> tuple[int, dict, list]:
    """Restore weights and optimizer in place; -> (step, the draft's config.json dict, history)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = out / CHECKPOINT_DIR
    if not (folder / "state.json").is_file():
        raise InputError(f"--resume: {folder} holds no checkpoint (state.json); train without --resume first")
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
        weights = load_file(str(folder / "model.safetensors"))
        moments = load_file(str(folder / "optimizer.safetensors"))
        step = int(state["step"])
    except (OSError, ValueError, KeyError, TypeError, SafetensorError) as exc:
        raise WeightsError(f"--resume: the checkpoint in {folder} is unreadable ({one_line(exc)})") from None
    if set(weights) != set(draft.state_dict()):
        raise InputError(f"--resume: the checkpoint in {folder} belongs to a different draft")
    draft.load_state_dict({k: v.to(draft.state_dict()[k].dtype) for k, v in weights.items()})
    names = dict(draft.named_parameters())
    for name, count in state.get("adam_steps", {}).items():
        p = names[name]
        optimizer.state[p] = {"step": torch.tensor(count), "exp_avg": moments[f"{name}::exp_avg"].to(p.device),
                              "exp_avg_sq": moments[f"{name}::exp_avg_sq"].to(p.device)}
    return step, state.get("draft_config", {}), list(state.get("history", []))


def export_draft(out: Path, draft, draft_config: dict, dtype: str) -> None:
    """The trained draft in z-lab format: config.json (torch_dtype set) + model.safetensors."""
    config = dict(draft_config, torch_dtype=dtype)
    config.pop("dtype", None)
    target_dtype = getattr(torch, dtype)
    _save_tensors(out / "model.safetensors", {k: v.to(target_dtype) for k, v in draft.state_dict().items()})
    write_json(out / "config.json", config)
