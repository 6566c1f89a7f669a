"""Where a transformers target keeps its embedding, output head, decoder layers and final norm, and
how its forward scales the embedding output and the logits. Reads a meta-device model; no compute."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ..contract import FINAL_NORM_NAMES
from ..facts import ModulePaths, Scaling
from ..specs import TargetSpec
from .torch_build import call_hook, text_config

__all__ = ["locate", "scaling_facts", "strip_wrapper_prefix", "unwrapped"]

_LAYER_LIST_NAMES = ("layers", "h", "blocks", "layer", "block")
_NOT_TEXT = ("vision", "visual", "audio", "image", "vit", "mm_projector", "multi_modal_projector", "speech")
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


def _names(model: Any) -> dict[int, str]:
    # named_modules() yields each module once, under its first path: the path engines use.
    return {id(m): n for n, m in model.named_modules()}


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


def _is_text(path: str) -> bool:
    return not any(part in path.lower() for part in _NOT_TEXT)


def _config_layers(model: Any, target: TargetSpec) -> Optional[int]:
    # Decoder-only configs say num_hidden_layers; encoder-decoder style ones (Blenderbot, ...) map that name to
    # the encoder and count the decoder separately.
    cfg = text_config(model)
    dec = getattr(cfg, "decoder_layers", None)
    return (dec if isinstance(dec, int) and not isinstance(dec, bool) else None) or getattr(
        cfg, "num_hidden_layers", None) or target.num_hidden_layers


def _find_embed(model: Any, names: dict[int, str], vocab: Optional[int]) -> tuple[Any, Optional[str]]:
    import torch.nn as nn

    emb = call_hook(model, "get_input_embeddings")
    if emb is not None and id(emb) in names:
        return emb, "get_input_embeddings"
    for path, m in model.named_modules():
        if isinstance(m, nn.Embedding) and (vocab is None or m.num_embeddings == vocab) and _is_text(path):
            return m, "search"
    return None, None


def _find_head(model: Any, names: dict[int, str], vocab: Optional[int]) -> tuple[Any, Optional[str]]:
    import torch.nn as nn

    head, via = getattr(model, "lm_head", None), "lm_head"
    if not isinstance(head, nn.Module):
        head, via = call_hook(model, "get_output_embeddings"), "get_output_embeddings"
    if head is not None and id(head) in names:
        return head, via
    found = None
    for path, m in model.named_modules():
        if isinstance(m, nn.Linear) and (vocab is None or m.out_features == vocab) and _is_text(path):
            found = m  # the last vocab-wide projection is the output head
    return found, "search" if found is not None else None


def _find_layers(model: Any, decoder_path: Optional[str], n_layers: Optional[int]) -> tuple[Optional[str], Any]:
    """The decoder's ModuleList of `n_layers` blocks (vision towers excluded), and how it was found."""
    import torch.nn as nn

    lists = [(p, m) for p, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) and _is_text(p)]
    prefix = decoder_path
    scoped = [(p, m) for p, m in lists if prefix is None or prefix == "" or p.startswith(prefix + ".")] or lists

    def rank(item):
        p, m = item
        leaf = p.rsplit(".", 1)[-1]
        return (len(m) != n_layers, leaf not in _LAYER_LIST_NAMES, p.count("."), -len(m))

    if not scoped:
        return None, None
    best = min(scoped, key=rank)
    if best[0].rsplit(".", 1)[-1] not in _LAYER_LIST_NAMES and len(best[1]) != n_layers:
        return None, None
    layers = best[0]
    via = "get_decoder" if prefix is not None and layers.startswith(f"{prefix}.") else "search"
    return layers, via


def locate(model: Any, target: TargetSpec) -> ModulePaths:
    """Where the embedding, head, decoder layers and final norm are, and how each was found."""
    import torch.nn as nn

    names = _names(model)
    vocab = getattr(text_config(model), "vocab_size", None) or target.vocab_size
    n_layers = _config_layers(model, target)
    emb, embed_via = _find_embed(model, names, vocab)
    head, head_via = _find_head(model, names, vocab)
    width, takes = _widths(emb, head, target.hidden_size)
    w_emb, w_head = getattr(emb, "weight", None), getattr(head, "weight", None)
    decoder = call_hook(model, "get_decoder")
    decoder_path = names.get(id(decoder)) if decoder is not None else None
    layers, layers_via = _find_layers(model, decoder_path, n_layers)
    layer_list = model.get_submodule(layers) if layers is not None else None
    return ModulePaths(
        embed=names.get(id(emb)) if emb is not None else None,
        head=names.get(id(head)) if head is not None else None,
        layers=layers,
        norm=_final_norm(model, decoder, names),
        tied=bool(w_emb is not None and w_head is not None and w_head is w_emb) if head is not None else None,
        embed_class=type(emb).__name__ if emb is not None else None,
        head_class=type(head).__name__ if head is not None else None,
        layers_len=len(layer_list) if layer_list is not None else None,
        layer_classes=tuple(sorted({type(m).__name__ for m in layer_list})) if layer_list is not None else (),
        decoder=decoder_path,
        embed_via=embed_via,
        head_via=head_via,
        layers_via=layers_via,
        config_layers=n_layers,
        embed_width=width,
        head_takes_hidden=takes,
        # Fixed attribute paths older runtimes use (z-lab `target.model.embed_tokens`, MLX-port `model.layers`).
        has_model_embed_tokens=_has_path(model, "model.embed_tokens"),
        has_lm_head_attr=isinstance(getattr(model, "lm_head", None), nn.Module),
    )


def _final_norm(model: Any, decoder: Any, names: dict[int, str]) -> Optional[str]:
    """The decoder's final norm (Llama/Qwen `model.norm`, GPT-2 `transformer.ln_f`, OPT `final_layer_norm`)."""
    import torch.nn as nn

    for owner in (decoder, model):
        if owner is None:
            continue
        for attr in FINAL_NORM_NAMES:
            m = getattr(owner, attr, None) if attr in getattr(owner, "_modules", {}) else None
            if isinstance(m, nn.Module) and "norm" in type(m).__name__.lower() and id(m) in names:
                return names[id(m)]
    return None


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
