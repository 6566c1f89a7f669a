"""Where a transformers target keeps its embedding, output head, decoder layers and final norm, and
how its forward scales the embedding output and the logits. Reads a meta-device model; no compute."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from dflash_compat.adapters.locate import locate_modules, text_config
from dflash_compat.modelfacts import ModulePaths, Scaling
from dflash_compat.specs import TargetSpec

__all__ = ["locate", "scaling_facts", "strip_wrapper_prefix", "unwrapped"]

# Attributes that scale the embedding output inside the forward (module or decoder level).
_SCALE_ATTRS = ("scalar_embed_scale", "embed_scale", "embedding_multiplier", "scale_emb", "normalizer")
_WRAPPER_PREFIX = "target."  # where an adapter shim keeps the original model


def unwrapped(model: Any) -> Any:
    """The user's model under an adapter shim (its `.target`), else the model itself."""
    import torch.nn as nn

    inner = getattr(model, "target", None) if type(model).__name__ == "DFlashAdapted" else None
    return inner if isinstance(inner, nn.Module) else model


def strip_wrapper_prefix(paths: ModulePaths) -> ModulePaths:
    """Paths as the user's model names them (`transformer.wte`), not through the shim (`target.transformer.wte`)."""

    def strip(path: Optional[str]) -> Optional[str]:
        return path[len(_WRAPPER_PREFIX):] if isinstance(path, str) and path.startswith(_WRAPPER_PREFIX) else path

    decoder = "" if paths.decoder == "target" else strip(paths.decoder)
    return dataclasses.replace(paths, embed=strip(paths.embed), head=strip(paths.head), layers=strip(paths.layers),
                               norm=strip(paths.norm), decoder=decoder)


def _widths(emb: Any, head: Any, hidden: Optional[int]) -> tuple[Optional[int], Optional[bool]]:
    """How wide the embedding's output is, and whether the head takes hidden-size inputs, found by
    running both on meta tensors (no compute). OPT-350m-style models embed at a narrower width and
    project in / out around the decoder, which the draft cannot see through."""
    import torch

    width = takes = None
    if emb is not None:
        try:
            width = int(emb(torch.zeros((1, 1), dtype=torch.long, device="meta")).shape[-1])
        except Exception:  # an exotic embedding: fall back to its table's width
            w = getattr(emb, "weight", None)
            width = int(w.shape[-1]) if w is not None and w.dim() == 2 else None
    if head is not None and hidden:
        try:
            head(torch.zeros((1, 1, hidden), device="meta"))  # [batch, seq, hidden]
            takes = True
        except Exception:
            takes = False
    return width, takes


def locate(model: Any, target: TargetSpec) -> ModulePaths:
    """Where the embedding, head, decoder layers and final norm are, and how each was found: the shared
    locator's answer (dflash_compat.adapters.locate, which smoke's default adapter asks too)."""
    import torch.nn as nn

    found = locate_modules(model, target.vocab_size, target.num_hidden_layers)
    emb, head, layer_list = found.embed, found.head, found.layers
    width, takes = _widths(emb, head, target.hidden_size)
    w_emb, w_head = getattr(emb, "weight", None), getattr(head, "weight", None)
    return ModulePaths(
        embed=found.embed_path,
        head=found.head_path,
        layers=found.layers_path,
        norm=found.norm_path,
        tied=bool(w_emb is not None and w_head is not None and w_head is w_emb) if head is not None else None,
        embed_class=type(emb).__name__ if emb is not None else None,
        head_class=type(head).__name__ if head is not None else None,
        layers_len=len(layer_list) if layer_list is not None else None,
        layer_classes=tuple(sorted({type(m).__name__ for m in layer_list})) if layer_list is not None else (),
        decoder=found.decoder_path,
        embed_via=found.embed_via,
        head_via=found.head_via,
        layers_via=found.layers_via,
        config_layers=found.config_layers,
        embed_width=width,
        head_takes_hidden=takes,
        # Fixed attribute paths older runtimes use (z-lab `target.model.embed_tokens`, MLX-port `model.layers`).
        has_model_embed_tokens=_has_path(model, "model.embed_tokens"),
        has_lm_head_attr=isinstance(getattr(model, "lm_head", None), nn.Module),
    )


def _has_path(model: Any, path: str) -> bool:
    try:
        model.get_submodule(path)
        return True
    except AttributeError:
        return False


def _float_attr(obj: Any, name: str) -> Optional[float]:
    value = getattr(obj, name, None)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    # A tensor buffer on the meta device has no value; a real one (CPU) does.
    try:
        if getattr(value, "device", None) is not None and value.device.type != "meta" and value.numel() == 1:
            return float(value.item())
    except Exception:  # noqa: BLE001
        return None
    return None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def scaling_facts(model: Any, paths: ModulePaths) -> Scaling:
    """Scales applied to the embedding output inside the forward, and what the forward does to the logits."""
    emb = model.get_submodule(paths.embed) if paths.embed is not None else None
    owner = model.get_submodule(paths.decoder) if paths.decoder else None
    scale, source = 1.0, []
    for where, obj in (("embedding", emb), ("decoder", owner)):
        if obj is None:
            continue
        for attr in _SCALE_ATTRS:
            value = _float_attr(obj, attr)
            if value is not None and value != 1.0:
                scale *= value
                source.append(f"{where}.{attr}")
                break  # scalar_embed_scale and embed_scale carry the same number
    if emb is not None and "Scaled" in type(emb).__name__ and not source:
        source.append(f"embedding class {type(emb).__name__}")
        scale = float("nan")  # scaled, value unknown
    cfg = text_config(model)
    cap, div = _number(getattr(cfg, "final_logit_softcapping", None)), _number(getattr(cfg, "logits_scaling", None))
    return Scaling(
        embed_scaled=bool(source),
        embed_scale=None if not source or scale != scale else scale,
        embed_scale_source=tuple(source),
        logit_softcap=cap if cap is not None and cap > 0 else None,
        logits_scaling=div if div is not None and div != 1 else None,
    )
