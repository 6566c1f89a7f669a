"""The cache a transformers target builds, and whether cropping it really rolls rejected tokens back."""

from __future__ import annotations

from typing import Any

from dflash_compat.adapters.cache_layers import cache_class, classify_layers, records_recurrent_history
from dflash_compat.exceptions import error_line
from dflash_compat.inspection.torch_build import text_config
from dflash_compat.inspection.torch_locate import unwrapped
from dflash_compat.modelfacts import CacheFacts, ModulePaths

__all__ = ["cache_facts", "crop_semantics"]


def cache_facts(model: Any, paths: ModulePaths) -> CacheFacts:
    """Build the cache the model's forward would build and classify its layers."""
    base = unwrapped(model)  # class-level facts belong to the user's model, not to an adapter shim
    supports = getattr(type(base), "_supports_default_dynamic_cache", None)
    if callable(supports) and not supports():
        # rwkv, xlstm, the original MiniMax: the model keeps its own recurrent state object.
        return CacheFacts(rollback="none", cache_class="model-managed",
                          non_croppable=tuple(range(paths.config_layers or 0)),
                          recurrent_history=records_recurrent_history(base))
    cls = cache_class(base)
    name = cls.__name__ if cls is not None else None
    try:
        cache = cls(config=model.config)
    except Exception as exc:  # noqa: BLE001 - 4.x caches take other arguments
        return CacheFacts(cache_class=name, error=error_line(exc))
    layers = list(getattr(cache, "layers", []) or [])
    non_croppable, sliding, conv = classify_layers(model, layers)
    window = getattr(text_config(model), "sliding_window", None)
    return CacheFacts(
        layers=tuple(type(layer).__name__ for layer in layers),
        rollback="none" if non_croppable else "crop",
        cache_class=name,
        non_croppable=tuple(non_croppable),
        sliding=tuple(sliding),
        conv_state=tuple(conv),
        past_recording=hasattr(cache, "activate_past_recording"),
        sliding_window=window if isinstance(window, int) else None,
        recurrent_history=records_recurrent_history(base) if non_croppable else None,
    )


def crop_semantics() -> str:
    """How this transformers' DynamicCache.crop reads its argument, found by cropping a 3-token CPU cache."""
    import torch
    from transformers.cache_utils import DynamicCache

    kv = torch.zeros(1, 1, 3, 1)  # [batch, heads, seq, head_dim]
    try:
        cache = DynamicCache()
        cache.update(kv, kv, 0)
        try:
            cache.crop(1)
        except ValueError:
            return "negative-count"  # 5.x: crop(-n) removes n tokens; a positive value raises
        return "absolute-length" if cache.get_seq_length() == 1 else "unknown"  # 4.x: crop(n) keeps n tokens
    except Exception:  # noqa: BLE001
        return "unknown"
