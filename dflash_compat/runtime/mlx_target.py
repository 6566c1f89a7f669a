"""An mlx-lm target as the MLX runtime loads and runs it: forward with feature capture, the cache, its exact rollback.

Mirrors torch_target.py. Hidden-state capture and the GatedDeltaNet replay record work by giving
the chosen layer instances, for the duration of one forward, a subclass whose __call__ also
records; mlx-lm's code and every other instance are left alone. Where the pieces live is the
adapter's business (dflash_compat.adapters, chosen by model_type).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

import mlx.core as mx
import mlx.nn as nn

from dflash_compat.adapters import TargetAdapter, mlx_adapter_for
from dflash_compat.contract import MLX_REFERENCE_EMBED_PATHS, MLX_ROTATING_CACHES, MLX_RUNTIME_REPLAY_MODULES
from dflash_compat.exceptions import RemoteCodeError, RuntimeUnsupportedError, WeightsError, error_line, one_line
from dflash_compat.runtime.checkpoints import target_folder
from dflash_compat.runtime.mlx_layout import cache_facts
from dflash_compat.runtime.target import RollbackKind, Target, TargetOutput, position_limit

__all__ = ["MLXTarget", "MLXCache", "target_for", "load_target", "layer_output", "cut_rotating", "cut_entry"]


def layer_output(output: Any) -> mx.array:
    """A decoder layer's hidden states: most mlx-lm layers return an array, a few a tuple
    (hidden, extra state) whose first element is the hidden states."""
    return output[0] if isinstance(output, (tuple, list)) else output


# ---------------------------------------------------------------------------------------------
# per-instance call recording
# ---------------------------------------------------------------------------------------------

# id(instance) -> (before, after) callbacks; only instances inside a `_recording` block have an
# entry, and only they have the recording subclass.
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
class Replay:
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
    replay: dict[int, Replay] = field(default_factory=dict)


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


def cut_entry(entry: Any, n: int) -> None:
    """Drop the newest n positions of one cache entry whose state is per position (KV, rotating, lists)."""
    kind = type(entry).__name__
    if kind in MLX_ROTATING_CACHES:
        cut_rotating(entry, n)
    elif kind == "CacheList":
        for part in entry.caches:
            cut_entry(part, n)
    else:
        trimmed = entry.trim(n)
        if trimmed != n:  # e.g. a ChunkedKVCache cannot trim below its chunk's start
            raise RuntimeUnsupportedError(
                f"a {kind} layer could only drop {trimmed} of the {n} rejected positions; "
                "its cache cannot be rolled back exactly"
            )


def _replayable_module(layer: Any) -> Optional[Any]:
    """The GatedDeltaNet-style submodule of a decoder layer whose call we know how to replay."""
    stack = [layer] if layer is not None else []
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


# ---------------------------------------------------------------------------------------------
# the target
# ---------------------------------------------------------------------------------------------


class MLXTarget(Target):
    """An mlx-lm model behind its adapter: caches are mlx-lm's own (make_prompt_cache); rollback
    cuts KV caches, reorders and cuts rotating ones, and replays GatedDeltaNet layers."""

    no_pieces_message = (f"target ({{model}}): no embed_tokens at {' / '.join(MLX_REFERENCE_EMBED_PATHS)}; "
                         "this layout needs its own adapter (dflash-check adapt --framework mlx)")

    def __init__(self, adapter: TargetAdapter) -> None:
        super().__init__(adapter)
        self.config: dict[str, Any] = dict(adapter.config or {})
        self._replay_modules: dict[int, Any] = {}
        self._plan = self._cache_plan()
        self._kind, self._problem = self._rollback_kind()

    # ---- shape ---------------------------------------------------------------------------

    @property
    def hidden_size(self) -> int:
        emb = self._embedding
        if isinstance(emb, nn.QuantizedEmbedding):
            return int(emb.dims)
        return int(emb.weight.shape[1])

    @property
    def dtype(self) -> Any:
        emb = self._embedding
        return emb.scales.dtype if isinstance(emb, nn.QuantizedEmbedding) else emb.weight.dtype

    @property
    def max_positions(self) -> Optional[int]:
        text = self.config.get("text_config")
        cfg = {**self.config, **text} if isinstance(text, dict) else self.config
        rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
        return position_limit(cfg.get("max_position_embeddings", cfg.get("n_positions")), rope)

    # ---- borrowed modules ----------------------------------------------------------------

    def embedding_rows(self, input_ids: mx.array) -> mx.array:
        # [B, T] -> [B, T, E]; mlx-lm embedding modules hold the raw table (Gemma scales in the model body)
        return self._embedding(input_ids)

    # ---- running -------------------------------------------------------------------------

    def new_cache(self, static_length: Optional[int] = None) -> MLXCache:
        if static_length is not None:  # mlx_generate refuses cache="static" before any forward
            raise RuntimeUnsupportedError("the MLX runtime has no static cache; use the dynamic one")
        from mlx_lm.models.cache import make_prompt_cache

        return MLXCache(entries=make_prompt_cache(self.model))

    def forward(self, input_ids: mx.array, cache: MLXCache, start: int, *, capture: Sequence[int] = (),
                logits_to_keep: int = 0) -> TargetOutput:
        # input_ids [B, T] at positions start .. start+T-1 (mlx-lm caches track positions themselves)
        if cache.length != start:
            raise RuntimeError(f"target cache holds {cache.length} positions, forward starts at {start}")
        self.check_capture(capture)
        captured: dict[int, mx.array] = {}
        hooks: dict[int, tuple[Any, Any, Any]] = {}
        for i in capture:
            layer = self._layers[i]
            hooks[id(layer)] = (layer, None, lambda out, i=i: captured.__setitem__(i, layer_output(out)))
        cache.replay = {}
        for i, module in self._replay_modules.items():
            before = self._recorder(cache, i, start)
            key = id(module)
            hooks[key] = (module, before, hooks[key][2] if key in hooks else None)  # a captured layer too
        with _recording(hooks):
            logits = self.model(input_ids, cache=cache.entries)  # [B, T, V]
        cache.length += input_ids.shape[1]
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        if not capture:
            return TargetOutput(logits, None)
        feats = [captured[i] for i in capture]  # each [B, T, H]
        return TargetOutput(logits, feats[0] if len(feats) == 1 else mx.concatenate(feats, axis=-1))

    @staticmethod
    def _recorder(cache: MLXCache, i: int, start: int):
        """The before-call hook of recurrent layer i: keep its state and its input for a replay."""
        entry = cache.entries[i]

        def before(inst, args, kwargs):
            x = args[0] if args else kwargs["inputs"]
            mask = args[1] if len(args) > 1 else kwargs.get("mask")
            cache.replay[i] = Replay(inst, list(entry.cache), x, mask, start)

        return before

    def cache_length(self, cache: MLXCache) -> int:
        return cache.length

    def rollback(self, cache: MLXCache, length: int) -> None:
        drop = self.positions_to_drop(cache.length, length)
        if drop == 0:
            return
        self.require_rollback()
        for i, entry in enumerate(cache.entries):
            if i in self._replay_modules:
                self._replay(cache, i, entry, length)
            else:
                cut_entry(entry, drop)
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

    # ---- what the cache is made of ----------------------------------------------------------

    def _cache_plan(self) -> list[dict[str, Any]]:
        from mlx_lm.models.cache import make_prompt_cache

        plan = []
        for i, entry in enumerate(make_prompt_cache(self.model)):
            fact = cache_facts(entry)
            fact["layer"] = i
            if not fact["trimmable"] and fact["kind"] not in MLX_ROTATING_CACHES:
                module = _replayable_module(self._layers[i]) if i < len(self._layers) else None
                if module is not None:
                    self._replay_modules[i] = module
                    fact["module"] = f"{type(module).__module__}.{type(module).__qualname__}"
            plan.append(fact)
        return plan

    def _rollback_kind(self) -> tuple[RollbackKind, Optional[str]]:
        model_type = self.config.get("model_type") or type(self.model).__module__.rsplit(".", 1)[-1]
        blocked = [f for f in self._plan if not f["trimmable"] and f["kind"] not in MLX_ROTATING_CACHES
                   and f["layer"] not in self._replay_modules]
        if blocked:
            kinds = sorted({f["kind"] for f in blocked})
            return "none", (
                f"{model_type} layers {[f['layer'] for f in blocked][:8]} keep a recurrent state "
                f"({', '.join(kinds)}) that can be neither cut nor replayed"
            )
        return ("replay" if self._replay_modules else "crop"), None


def target_for(model: Any, config: Optional[dict[str, Any]] = None, *, adapter: Optional[str] = None) -> MLXTarget:
    """A loaded mlx-lm model as the runtime's target, through its adapter: a built-in layout adapter
    chosen by model_type, else the default one; `adapter` (--adapter FILE_OR_NAME): a shim file from
    `dflash-check adapt --framework mlx`, or a built-in adapter name."""
    return MLXTarget(mlx_adapter_for(model, config, adapter))


def load_target(
    ref: Union[str, Path],
    *,
    dtype: Optional[mx.Dtype] = None,
    trust_remote_code: bool = False,
    token: Optional[str] = None,
    adapter: Optional[str] = None,
) -> MLXTarget:
    """Load an mlx-lm target (folder or Hub id; safetensors only, checked) and run it through its
    adapter. `dtype` casts the floating-point weights (None keeps the checkpoint's); `adapter`: a
    shim file or built-in adapter name (default: chosen by model_type)."""
    from mlx_lm.utils import load_model

    # mlx-lm loads every model*.safetensors it finds: the checked lookup has seen each of them
    folder = target_folder(ref, token=token, trust_remote_code=trust_remote_code)
    try:
        model, config = load_model(folder, trust_remote_code=trust_remote_code)
    except ValueError as exc:
        text = one_line(exc, 400)
        if "trust_remote_code" in text:
            raise RemoteCodeError(
                f"target {ref}: the model needs its repository's own code; pass --trust-remote-code if you trust it"
            ) from None
        if text.startswith(("Missing", "Received", "Expected shape")) or "parameters" in text:
            # mlx-lm's load_weights(strict=True): the checkpoint does not match its config.json
            raise WeightsError(f"target {ref}: the weights do not match its config.json ({text})") from None
        raise RuntimeUnsupportedError(f"target {ref}: mlx-lm cannot load it ({text})") from None
    except (RuntimeError, OSError) as exc:  # mx.load on a truncated / corrupt safetensors file
        raise WeightsError(f"target {ref}: cannot load its weights ({one_line(exc, 400)})") from None
    except (TypeError, KeyError, AttributeError, IndexError) as exc:
        # ModelArgs(**config) without a key mlx-lm requires, e.g. gpt2's n_ctx, which transformers 5 no longer
        # writes: mlx_lm.load (and so the MLX port) fails the same way; the deep check reports it as DF510
        import mlx_lm

        raise RuntimeUnsupportedError(
            f"target {ref}: mlx-lm {getattr(mlx_lm, '__version__', '?')} cannot build it from its config.json "
            f"({error_line(exc)}), so the MLX port cannot load it either (DF510); run it with --backend torch"
        ) from None
    if dtype is not None:
        model.set_dtype(dtype)
    return target_for(model, config, adapter=adapter)
