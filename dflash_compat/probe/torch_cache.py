"""The cache a transformers target builds, and whether cropping it really rolls rejected tokens back."""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any, Optional

from ..exceptions import error_line
from ..facts import CacheFacts, ModulePaths
from .torch_build import call_hook, text_config
from .torch_locate import unwrapped

__all__ = ["cache_facts", "crop_semantics"]

_CACHE_BUILD = re.compile(r"\b(\w*Cache)\(\s*config\s*=")


def _cache_class(model: Any) -> Optional[type]:
    """The cache class the model's own forward builds when none is passed (DynamicCache for most)."""
    import transformers.cache_utils as cu

    for obj in (call_hook(model, "get_decoder"), model):
        if obj is None:
            continue
        try:
            src = inspect.getsource(type(obj).forward)
        except (OSError, TypeError):
            continue
        m = _CACHE_BUILD.search(src)
        if m:
            mod = sys.modules.get(type(obj).__module__)
            cls = getattr(mod, m.group(1), None) or getattr(cu, m.group(1), None)
            if isinstance(cls, type):
                return cls
    return getattr(cu, "DynamicCache", None)


def _modeling_sources(model: Any):
    """The source of each transformers modeling module (or remote-code module) the model's layers come from;
    None for one whose source cannot be read."""
    for name in {type(m).__module__ for m in model.modules()}:
        mod = sys.modules.get(name)
        if mod is None or not name.startswith(("transformers.models.", "transformers_modules.")):
            continue
        try:
            yield inspect.getsource(mod)
        except (OSError, TypeError):
            yield None


def _module_writes_recurrent_state(model: Any) -> Optional[bool]:
    seen = False
    for src in _modeling_sources(model):
        if src is None:
            return None
        seen = True
        if "update_recurrent_state" in src or "recurrent_states" in src or "ssm_states" in src:
            return True
    return False if seen else None


def _records_recurrent_history(model: Any) -> Optional[bool]:
    """Whether the model's modeling code records per-step recurrent states for a crop to restore: it asks
    the cache how many to keep (transformers 5.25.0 cache_utils.py:1162-1171 activate_past_recording(
    recurrent_states_to_keep=...), :1944-1955 get_recurrent_states_to_keep, :1202-1204 crop restores from
    the history). None where this transformers has no such API."""
    import transformers.cache_utils as cu

    if not hasattr(getattr(cu, "Cache", None), "get_recurrent_states_to_keep"):
        return None
    for src in _modeling_sources(model):
        if src is None:
            return None
        if "get_recurrent_states_to_keep" in src:
            return True
    return False


def _classify_layers(model: Any, layers: list[Any]) -> tuple[list[int], list[int], list[int]]:
    """(non-croppable, sliding, conv-state) layer indices of a built cache."""
    import transformers.cache_utils as cu

    try:
        types, _ = cu.get_layer_types_and_kwargs(text_config(model))
    except Exception:  # noqa: BLE001
        types = [None] * len(layers)
    linear_mixin = getattr(cu, "LinearAttentionCacheLayerMixin", ())
    dummy = getattr(cu, "DummyLayer", ())
    sliding_cls = getattr(cu, "DynamicSlidingWindowLayer", ())
    recurrent_writes = _module_writes_recurrent_state(model)
    non_croppable, sliding, conv = [], [], []
    for i, (layer, kind) in enumerate(zip(layers, list(types) + [None] * len(layers))):
        if dummy and isinstance(layer, dummy):
            continue
        if linear_mixin and isinstance(layer, linear_mixin):
            # A conv-only state (LFM2 short convs) is restored exactly by cropping with past recording;
            # a recurrent / SSM state is not: rejected tokens stay folded into it.
            if kind == "conv" or recurrent_writes is False:
                conv.append(i)
            else:
                non_croppable.append(i)
            if getattr(layer, "is_sliding", False):
                sliding.append(i)
            continue
        flag = getattr(type(layer), "is_croppable", True)
        if isinstance(flag, bool) and not flag:
            non_croppable.append(i)
        if (sliding_cls and isinstance(layer, sliding_cls)) or getattr(layer, "is_sliding", False) is True:
            sliding.append(i)
    return non_croppable, sliding, conv


def cache_facts(model: Any, paths: ModulePaths) -> CacheFacts:
    """Build the cache the model's forward would build and classify its layers."""
    base = unwrapped(model)  # class-level facts belong to the user's model, not to an adapter shim
    supports = getattr(type(base), "_supports_default_dynamic_cache", None)
    if callable(supports) and not supports():
        # rwkv, xlstm, the original MiniMax: the model keeps its own recurrent state object.
        return CacheFacts(rollback="none", cache_class="model-managed",
                          non_croppable=tuple(range(paths.config_layers or 0)),
                          recurrent_history=_records_recurrent_history(base))
    cls = _cache_class(base)
    name = cls.__name__ if cls is not None else None
    try:
        cache = cls(config=model.config)
    except Exception as exc:  # noqa: BLE001 - 4.x caches take other arguments
        return CacheFacts(cache_class=name, error=error_line(exc))
    layers = list(getattr(cache, "layers", []) or [])
    non_croppable, sliding, conv = _classify_layers(model, layers)
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
        recurrent_history=_records_recurrent_history(base) if non_croppable else None,
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
