"""The default MLX adapter: mlx-lm models (Qwen3, Llama, Gemma 3, Qwen3.5 / Qwen3-Next hybrids, VLM wrappers, ...).

Mirrors torch_default.py. Hidden-state capture and the GatedDeltaNet replay record work by giving
the chosen layer instances, for the duration of one forward, a subclass whose __call__ also
records; mlx-lm's code and every other instance are left alone.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import mlx.core as mx
import mlx.nn as nn

from dflash_compat.contract import MLX_REFERENCE_EMBED_PATHS, MLX_REFERENCE_LAYERS_PATHS, MLX_RUNTIME_REPLAY_MODULES
from dflash_compat.exceptions import RuntimeUnsupportedError
from dflash_compat.probe.mlx_tree import cache_facts, get_path

from .base import RollbackKind, TargetAdapter, TargetOutput, position_limit

__all__ = ["MLXDefaultAdapter", "MLXCache", "mlx_adapter_for", "layer_output", "cut_rotating"]


def layer_output(output: Any) -> mx.array:
    """A decoder layer's hidden states: most mlx-lm layers return an array, a few a tuple
    (hidden, extra state) whose first element is the hidden states."""
    return output[0] if isinstance(output, (tuple, list)) else output


# ---------------------------------------------------------------------------------------------
# per-instance call recording
# ---------------------------------------------------------------------------------------------

# id(instance) -> callback(instance, args, kwargs, output); only instances inside a `_recording`
# block have an entry, and only they have the recording subclass.
_CALLBACKS: dict[int, Any] = {}
_RECORDING_CLASSES: dict[type, type] = {}


def _recording_class(cls: type) -> type:
    sub = _RECORDING_CLASSES.get(cls)
    if sub is None:
        def __call__(self, *args, **kwargs):
            hook = _CALLBACKS.get(id(self))
            if hook is not None and hook[0] is not None:
                hook[0](self, args, kwargs)  # before the call (replay record)
            out = cls.__call__(self, *args, **kwargs)
            if hook is not None and hook[1] is not None:
                hook[1](out)  # after the call (feature capture)
            return out

        sub = type(cls.__name__, (cls,), {"__call__": __call__, "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__, "_dflash_original": cls})
        _RECORDING_CLASSES[cls] = sub
    return sub


@contextmanager
def _recording(hooks: dict[int, tuple[Any, Any, Any]]) -> Iterator[None]:
    """hooks: id -> (instance, before(instance, args, kwargs) | None, after(output) | None)."""
    swapped = []
    try:
        for key, (inst, before, after) in hooks.items():
            cls = type(inst)
            inst.__class__ = _recording_class(cls)
            _CALLBACKS[key] = (before, after)
            swapped.append((inst, cls, key))
        yield
    finally:
        for inst, cls, key in swapped:
            inst.__class__ = cls
            _CALLBACKS.pop(key, None)


# ---------------------------------------------------------------------------------------------
# the cache and its rollback
# ---------------------------------------------------------------------------------------------


@dataclass
class _Replay:
    """What a recurrent layer needs to rebuild its state for a shorter prefix of the last forward."""

    module: Any  # the GatedDeltaNet instance
    state: list  # its cache arrays before the forward (mx arrays are immutable: references suffice)
    inputs: mx.array  # [B, T, H] the module's input in the forward
    mask: Optional[mx.array]
    start: int  # cache length before the forward


@dataclass
class MLXCache:
    """mlx-lm's per-layer cache entries, the number of positions they hold, and the replay records
    of the last forward."""

    entries: list
    length: int = 0
    replay: dict[int, _Replay] = field(default_factory=dict)


def cut_rotating(entry: Any, n: int) -> None:
    """Drop the newest n positions of a RotatingKVCache, exactly, also after its window wrapped.

    mlx-lm's own trim() only moves the write index, which corrupts a ring buffer that has wrapped
    (its is_trimmable() turns False there). A forward of T > 1 tokens leaves the buffer holding
    window-1+T positions; put them in temporal order and cut the newest n, provided what remains
    still covers the window the next forward attends to.
    """
    if n <= 0 or entry.keys is None:
        return
    keys, values = entry._temporal_order(entry.keys), entry._temporal_order(entry.values)
    held = keys.shape[2]
    new_offset = entry.offset - n
    needed = min(new_offset, entry.max_size - 1)
    if held - n < needed:
        raise RuntimeUnsupportedError(
            f"a sliding-window (RotatingKVCache, window {entry.max_size}) layer has overwritten positions "
            f"that a rollback of {n} tokens needs; it cannot be rolled back exactly"
        )
    entry.keys, entry.values = keys[..., : held - n, :], values[..., : held - n, :]
    entry.offset = new_offset
    entry._idx = entry.keys.shape[2]


def _cut(entry: Any, n: int) -> None:
    kind = type(entry).__name__
    if kind == "RotatingKVCache":
        cut_rotating(entry, n)
    elif kind == "CacheList":
        for part in entry.caches:
            _cut(part, n)
    else:
        trimmed = entry.trim(n)
        if trimmed != n:  # e.g. a ChunkedKVCache cannot trim below its chunk's start
            raise RuntimeUnsupportedError(
                f"a {kind} layer could only drop {trimmed} of the {n} rejected positions; "
                "its cache cannot be rolled back exactly"
            )


# ---------------------------------------------------------------------------------------------
# the adapter
# ---------------------------------------------------------------------------------------------


class MLXDefaultAdapter(TargetAdapter):
    """Finds the pieces where the DFlash MLX port looks (embed_tokens at embed_tokens /
    model.embed_tokens / language_model.model.embed_tokens; head at lm_head, else the tied
    embed_tokens.as_linear; layers at model.layers / language_model.layers / layers)."""

    name = "mlx-default"

    def __init__(self, model: nn.Module, config: Optional[dict[str, Any]] = None) -> None:
        super().__init__(model)
        self.config = dict(config or {})
        self._embedding = self.embed_tokens
        self._head = self.lm_head
        if self._embedding is None or self._head is None:
            raise RuntimeUnsupportedError(
                f"target ({type(model).__name__}): no embed_tokens at {' / '.join(MLX_REFERENCE_EMBED_PATHS)}; "
                "this layout needs its own adapter (dflash-check adapt --framework mlx)"
            )
        self._layers = self.decoder_layers
        self._plan = self._cache_plan()
        self._kind, self._problem = self._rollback_kind()

    # ---- where the pieces live (a layout adapter overrides these three) ------------------------

    @property
    def embed_tokens(self) -> Optional[nn.Module]:
        return next((m for m in (get_path(self.model, p) for p in MLX_REFERENCE_EMBED_PATHS) if m is not None), None)

    @property
    def lm_head(self) -> Optional[Any]:
        lm = get_path(self.model, "language_model") or self.model
        head = get_path(self.model, "lm_head") or get_path(lm, "lm_head")
        if head is None and self.embed_tokens is not None and hasattr(self.embed_tokens, "as_linear"):
            return self.embed_tokens.as_linear  # tied
        return head

    @property
    def decoder_layers(self) -> list:
        for path in MLX_REFERENCE_LAYERS_PATHS:
            layers = get_path(self.model, path)
            if layers is not None and len(layers) > 0:
                return list(layers)
        raise RuntimeUnsupportedError(
            f"target ({type(self.model).__name__}): no decoder layers at {' / '.join(MLX_REFERENCE_LAYERS_PATHS)}; "
            "this layout needs its own adapter (dflash-check adapt --framework mlx)"
        )

    # ---- shape ---------------------------------------------------------------------------

    @property
    def layers(self) -> Sequence[nn.Module]:
        return self._layers

    @property
    def hidden_size(self) -> int:
        emb = self._embedding
        if isinstance(emb, nn.QuantizedEmbedding):
            return int(emb.dims)
        return int(emb.weight.shape[1])

    @property
    def vocab_size(self) -> int:
        return int(self._embedding.weight.shape[0])

    @property
    def dtype(self) -> Any:
        emb = self._embedding
        return emb.scales.dtype if isinstance(emb, nn.QuantizedEmbedding) else emb.weight.dtype

    @property
    def max_positions(self) -> Optional[int]:
        cfg = self.config.get("text_config") if isinstance(self.config.get("text_config"), dict) else self.config
        cfg = {**self.config, **cfg}
        rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
        return position_limit(cfg.get("max_position_embeddings", cfg.get("n_positions")), rope)

    # ---- borrowed modules ----------------------------------------------------------------

    def embed(self, input_ids: mx.array) -> mx.array:
        # [B, T] -> [B, T, H]; mlx-lm embedding modules hold the raw table (Gemma scales in the model body)
        return self._embedding(input_ids)

    def head(self, hidden: mx.array) -> mx.array:
        # [B, T, H] -> [B, T, V]
        return self._head(hidden)

    # ---- running -------------------------------------------------------------------------

    def new_cache(self) -> MLXCache:
        from mlx_lm.models.cache import make_prompt_cache

        return MLXCache(entries=make_prompt_cache(self.model))

    def forward(
        self,
        input_ids: mx.array,
        cache: MLXCache,
        start: int,
        *,
        capture: Sequence[int] = (),
        logits_to_keep: int = 0,
    ) -> TargetOutput:
        # input_ids [B, T] at positions start .. start+T-1 (mlx-lm caches track positions themselves)
        if cache.length != start:
            raise RuntimeError(f"target cache holds {cache.length} positions, forward starts at {start}")
        for i in capture:
            if not 0 <= i < len(self._layers):
                raise RuntimeUnsupportedError(
                    f"target layer id {i} is out of range: the target has {len(self._layers)} decoder layers"
                )
        captured: dict[int, mx.array] = {}
        hooks: dict[int, tuple[Any, Any, Any]] = {}
        for i in capture:
            layer = self._layers[i]
            hooks[id(layer)] = (layer, None, lambda out, i=i: captured.__setitem__(i, layer_output(out)))
        cache.replay = {}
        for i, module in self._replay_modules.items():
            entry = cache.entries[i]

            def before(inst, args, kwargs, i=i, entry=entry):
                x = args[0] if args else kwargs["inputs"]
                mask = args[1] if len(args) > 1 else kwargs.get("mask")
                cache.replay[i] = _Replay(inst, list(entry.cache), x, mask, start)

            key = id(module)
            if key in hooks:  # the module is itself a captured layer
                hooks[key] = (module, before, hooks[key][2])
            else:
                hooks[key] = (module, before, None)
        with _recording(hooks):
            logits = self.model(input_ids, cache=cache.entries)  # [B, T, V]
        cache.length += input_ids.shape[1]
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        if not capture:
            return TargetOutput(logits, None)
        feats = [captured[i] for i in capture]  # each [B, T, H]
        return TargetOutput(logits, feats[0] if len(feats) == 1 else mx.concatenate(feats, axis=-1))

    def cache_length(self, cache: MLXCache) -> int:
        return cache.length

    def rollback(self, cache: MLXCache, length: int) -> None:
        drop = cache.length - length
        if drop < 0:
            raise ValueError(f"cannot roll a cache of {cache.length} positions forward to {length}")
        if drop == 0:
            return
        if self._kind == "none":
            self.require_rollback()
        for i, entry in enumerate(cache.entries):
            if i in self._replay_modules:
                self._replay(cache, i, entry, length)
            else:
                _cut(entry, drop)
        cache.length = length

    def _replay(self, cache: MLXCache, i: int, entry: Any, length: int) -> None:
        """Rebuild a recurrent layer's state for the first `length` positions: restore the state
        before the last forward and run the module's own call on the kept prefix of its input."""
        rec = cache.replay.get(i)
        if rec is None or not rec.start <= length:
            raise RuntimeUnsupportedError(
                f"target layer {i} keeps a recurrent state that can only be rolled back within the last forward"
            )
        entry.cache = list(rec.state)
        keep = length - rec.start
        if keep > 0:
            mask = rec.mask[:, :keep] if rec.mask is not None else None
            original = getattr(type(rec.module), "_dflash_original", type(rec.module))
            original.__call__(rec.module, rec.inputs[:, :keep], mask, entry)  # updates entry; output unused
        cache.replay.pop(i, None)

    @property
    def rollback_kind(self) -> RollbackKind:
        return self._kind

    @property
    def rollback_problem(self) -> Optional[str]:
        return self._problem

    # ---- what the cache is made of ----------------------------------------------------------

    def _cache_plan(self) -> list[dict[str, Any]]:
        from mlx_lm.models.cache import make_prompt_cache

        plan = []
        self._replay_modules: dict[int, Any] = {}
        for i, entry in enumerate(make_prompt_cache(self.model)):
            fact = cache_facts(entry)
            fact["layer"] = i
            if not fact["trimmable"] and fact["kind"] != "RotatingKVCache":
                module = _replayable_module(self._layers[i]) if i < len(self._layers) else None
                if module is not None:
                    self._replay_modules[i] = module
                    fact["module"] = f"{type(module).__module__}.{type(module).__qualname__}"
            plan.append(fact)
        return plan

    def _rollback_kind(self) -> tuple[RollbackKind, Optional[str]]:
        model_type = self.config.get("model_type") or type(self.model).__module__.rsplit(".", 1)[-1]
        blocked = [f for f in self._plan
                   if not f["trimmable"] and f["kind"] != "RotatingKVCache" and f["layer"] not in self._replay_modules]
        if blocked:
            kinds = sorted({f["kind"] for f in blocked})
            return "none", (
                f"{model_type} layers {[f['layer'] for f in blocked][:8]} keep a recurrent state "
                f"({', '.join(kinds)}) that can be neither cut nor replayed"
            )
        return ("replay" if self._replay_modules else "crop"), None


def _replayable_module(layer: Any) -> Optional[Any]:
    """The GatedDeltaNet-style submodule of a decoder layer whose call we know how to replay."""
    if layer is None:
        return None
    stack = [layer]
    while stack:
        node = stack.pop(0)
        if f"{type(node).__module__}.{type(node).__qualname__}" in MLX_RUNTIME_REPLAY_MODULES:
            return node
        for value in node.values():
            if isinstance(value, nn.Module):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, nn.Module))
    return None


def mlx_adapter_for(model: Any, config: Optional[dict[str, Any]] = None, adapter: Optional[str] = None) -> TargetAdapter:
    """The adapter for a loaded mlx-lm model: a built-in layout adapter chosen by model_type
    (adapters/registry.py), else the default one. `adapter` (--adapter FILE_OR_NAME): a shim file
    from `dflash-check adapt --framework mlx`, or a built-in adapter name."""
    from .loading import mlx_adapter

    return mlx_adapter(model, config, adapter)
