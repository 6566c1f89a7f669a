"""The cache a transformers model's forward builds, and which of its layers cropping cannot roll back: one
classification for the deep check (probe/torch_cache.py, whose facts DF201 and DF256 read) and for smoke's torch
runtime (runtime/torch_target.py), so that both give one answer for every model type."""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any, Optional

from dflash_compat.adapters.locate import call_hook, text_config

__all__ = ["cache_class", "classify_layers", "built_cache_crops", "records_recurrent_history"]

_CACHE_BUILD = re.compile(r"\b(\w*Cache)\(\s*config\s*=")


def cache_class(model: Any) -> Optional[type]:
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


def records_recurrent_history(model: Any) -> Optional[bool]:
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


def classify_layers(model: Any, layers: list[Any]) -> tuple[list[int], list[int], list[int]]:
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


def built_cache_crops(model: Any) -> bool:
    """True where the cache the model's forward builds crops back exactly, layer by layer (the deep check's
    verdict: its CacheFacts.rollback == "crop"); False where a layer cannot, or the cache cannot be built here."""
    supports = getattr(type(model), "_supports_default_dynamic_cache", None)
    if callable(supports) and not supports():
        return False  # the model keeps its own recurrent state object (rwkv, xlstm)
    cls = cache_class(model)
    try:
        cache = cls(config=model.config)
        non_croppable, _, _ = classify_layers(model, list(getattr(cache, "layers", []) or []))
    except Exception:  # noqa: BLE001 - a cache this transformers cannot build for the config
        return False
    return not non_croppable
