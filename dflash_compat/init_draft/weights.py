"""Initial weights for a new draft: seeded random, or copied from the target's layers where shapes allow.

Both return a state dict under the z-lab tensor names, built on our own draft module
(`runtime.torch_draft`), so what is written is exactly what the runtime and the trainer load.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import torch

from dflash_compat.exceptions import WeightsError, one_line
from dflash_compat.runtime.draft_config import DraftConfig
from dflash_compat.runtime.torch_draft import DFlashDraftModel, build_draft

__all__ = ["random_state", "state_from_target", "new_draft_module"]

_LAYER_KEY = re.compile(r"^(.*?)layers\.(\d+)\.(.+)$")


def new_draft_module(cfg: DraftConfig, raw: dict[str, Any], dtype: torch.dtype = torch.float32) -> DFlashDraftModel:
    """Our draft module with allocated (uninitialised) float weights on the CPU."""
    model = build_draft(cfg, raw).to_empty(device="cpu")
    return model.to(dtype)


@torch.no_grad()
def random_state(model: DFlashDraftModel, seed: int = 0, std: float = 0.02) -> dict[str, torch.Tensor]:
    """Fill `model` in place (seeded): linear and codebook weights ~ N(0, std), norms 1, conv kernels 0;
    -> its state dict."""
    gen = torch.Generator().manual_seed(seed)
    for name, param in model.named_parameters():
        if name.endswith("norm.weight"):
            param.fill_(1.0)
        elif name.endswith("base_kernel"):
            param.zero_()  # DFlash 2 convolutions start as the identity path (no mixing)
        else:
            param.copy_(torch.randn(param.shape, generator=gen) * std)
    return dict(model.state_dict())


def _target_tensors(folder: Path) -> dict[str, Path]:
    """Tensor name -> safetensors file holding it, through the checked weight lookup (plain shard
    names inside the folder, regular files only; weightfiles.py)."""
    from safetensors import SafetensorError, safe_open

    from dflash_compat.files.weightfiles import weight_paths

    names: dict[str, Path] = {}
    for path in weight_paths(folder, f"target {folder}"):
        try:
            with safe_open(str(path), framework="pt") as fh:
                names.update({k: path for k in fh.keys()})
        except (SafetensorError, OSError) as exc:
            raise WeightsError(f"{path}: cannot read safetensors ({one_line(exc)})") from None
    if not names:
        raise WeightsError(f"target {folder}: no *.safetensors files to initialise the draft from")
    return names


def _decoder_prefix(names: list[str], num_layers: Optional[int]) -> str:
    """The prefix of the language model's decoder layers (`model.`, `model.language_model.`, ...):
    the one with the most layer indices, preferring the target's depth (a vision tower has its own)."""
    counts: dict[str, set[int]] = {}
    for name in names:
        m = _LAYER_KEY.match(name)
        if m:
            counts.setdefault(m.group(1), set()).add(int(m.group(2)))
    if not counts:
        raise WeightsError("the target's weights hold no `layers.N.` tensors to initialise the draft from")
    return max(counts, key=lambda p: (len(counts[p]) == num_layers, "language_model" in p, len(counts[p]), -len(p)))


@torch.no_grad()
def state_from_target(model: DFlashDraftModel, folder: Path, num_layers: Optional[int], norm_offset: bool,
                      seed: int = 0) -> tuple[dict[str, torch.Tensor], int]:
    """Random weights (seeded), then draft layer i <- target layer target_layer_ids[i] wherever a
    tensor of the same name and shape exists; the final norm from the target's; fc the mean of the
    captured features (identity blocks / L). `norm_offset`: the target's norms compute x * (1 + w)
    (Gemma), ours x * w. -> (state dict, tensors copied from the target)."""
    from safetensors import safe_open

    state = random_state(model, seed)
    where = _target_tensors(folder)
    prefix = _decoder_prefix(list(where), num_layers)
    ids = model.cfg.target_layer_ids
    sources: dict[str, str] = {"norm.weight": f"{prefix}norm.weight"}
    for name in state:
        m = _LAYER_KEY.match(name)
        if m and m.group(1) == "":
            src = ids[min(int(m.group(2)), len(ids) - 1)]
            sources[name] = f"{prefix}layers.{src}.{m.group(3)}"
    copied = 0
    handles: dict[Path, Any] = {}
    try:
        for name, src in sources.items():
            if src not in where:
                continue
            path = where[src]
            if path not in handles:
                handles[path] = safe_open(str(path), framework="pt")
            tensor = handles[path].get_tensor(src)
            if tuple(tensor.shape) != tuple(state[name].shape) or not tensor.is_floating_point():
                continue
            if norm_offset and name.endswith("norm.weight"):
                tensor = tensor.float() + 1.0
            state[name].copy_(tensor.to(state[name].dtype))
            copied += 1
    finally:
        handles.clear()
    fc = state["fc.weight"]  # [H, L*H]
    h, n = fc.shape[0], fc.shape[1] // fc.shape[0]
    fc.copy_(torch.eye(h, dtype=fc.dtype).repeat(1, n) / n)
    return state, copied
