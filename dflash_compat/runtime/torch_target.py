"""A transformers target as the PyTorch runtime loads and runs it: forward with feature capture, cache, rollback.

Mirrored by mlx_target.py. Features come from forward hooks on just the requested layers (never
output_hidden_states for all); the cache is transformers' DynamicCache, cut with crop(-n). Where
the pieces live is the adapter's business (dflash_compat.adapters, chosen by model_type).
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn

from dflash_compat.adapters import TargetAdapter, torch_adapter_for
from dflash_compat.adapters.cache_layers import built_cache_crops
from dflash_compat.contract import ATTENTION_LAYER_TYPES, LOOP_KEYS, RECURRENT_MODEL_TYPES
from dflash_compat.exceptions import (
    ConfigError,
    RemoteCodeError,
    RuntimeUnsupportedError,
    WeightsError,
    error_line,
    one_line,
)
from dflash_compat.runtime.checkpoints import target_folder
from dflash_compat.runtime.target import RollbackKind, Target, TargetOutput, position_limit

__all__ = ["TorchTarget", "target_for", "load_target", "layer_output"]


def layer_output(output: Any) -> torch.Tensor:
    """A decoder layer's hidden states: transformers 5 layers return a tensor, older ones a tuple."""
    return output[0] if isinstance(output, (tuple, list)) else output


def _conv_crops_exactly() -> bool:
    """transformers 5's DynamicCache records conv states with past recording, so crop(-n) restores a conv-only
    layer exactly (cache_utils.py LinearAttentionCacheLayerMixin.crop); what the deep check's cache facts say too."""
    from transformers import DynamicCache

    return hasattr(DynamicCache, "activate_past_recording")


def _rollback_kind(text_config: Any, model: Any = None) -> tuple[RollbackKind, Optional[str]]:
    """Judged per layer where the config lists its layer types (as the check's DF201 does), else by model type;
    where the built cache says cropping is exact, that wins (DF201 returns there too)."""
    kind, problem = _rollback_by_name(text_config)
    if kind == "none" and model is not None and built_cache_crops(model):
        return "crop", None
    return kind, problem


def _applications(text_config: Any, built: int) -> Optional[int]:
    """How many layer applications a looped target's output_hidden_states has (its config's num_hidden_layers),
    or None for a target that applies each built layer once."""
    looped = any(isinstance(getattr(text_config, k, None), int) and getattr(text_config, k) > 1 for k in LOOP_KEYS)
    n = getattr(text_config, "num_hidden_layers", None)
    return n if looped and isinstance(n, int) and n > built else None


def _rollback_by_name(text_config: Any) -> tuple[RollbackKind, Optional[str]]:
    model_type = getattr(text_config, "model_type", None)
    layer_types = [t for t in getattr(text_config, "layer_types", None) or [] if isinstance(t, str)]
    if not layer_types:
        if model_type in RECURRENT_MODEL_TYPES:
            return "none", f"{model_type} keeps a recurrent (SSM / linear-attention) state that cropping cannot undo"
        return "crop", None
    # LFM2: short convolutions and attention, no recurrent state: its conv states crop exactly
    exact = set(ATTENTION_LAYER_TYPES) | ({"conv"} if _conv_crops_exactly() else set())
    other = sorted({t for t in layer_types if t not in exact})
    if other:
        return "none", f"layer types {other} keep a recurrent state that cropping cannot undo"
    return "crop", None


class TorchTarget(Target):
    """A transformers model behind its adapter: DynamicCache with past recording (transformers 5),
    rollback by crop, context features by forward hooks."""

    no_pieces_message = ("target ({model}): no input embedding or output head found (get_input_embeddings / "
                         "lm_head / get_output_embeddings); write an adapter for it (dflash-check adapt)")

    def __init__(self, adapter: TargetAdapter) -> None:
        super().__init__(adapter)
        self.config = adapter.config
        self.text_config = getattr(adapter, "text_config", adapter.config)
        params = inspect.signature(self.model.forward).parameters
        # transformers >= 5.x names the cache `cache`; older releases (and many remote-code
        # models) take `past_key_values`.
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"
        self._keep_kwarg = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        self._kind, self._problem = _rollback_kind(self.text_config, self.model)
        # A looped target (HRM, Dory) applies its layers more than once per token: a hook on a layer would fire
        # once per application, so features come from output_hidden_states, indexed by application as the
        # dflash reference indexes them (dflash 0.1.0 dflash/model.py:37-43)
        self._applications = _applications(self.text_config, len(self._layers))
        # CUDA graphs (use_graphs): the compiled model, the block length it runs, persistent capture hooks
        self._graphed: Any = None
        self._graph_length = 0
        self._graph_hooks: dict[int, Any] = {}
        self._graph_state: dict[str, Any] = {"want": (), "features": None, "filled": 0}

    # ---- shape ---------------------------------------------------------------------------

    @property
    def hidden_size(self) -> int:
        return int(getattr(self.text_config, "hidden_size", None) or self._embedding.weight.shape[1])

    @property
    def device(self) -> torch.device:
        return self._embedding.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self._embedding.weight.dtype

    @property
    def max_positions(self) -> Optional[int]:
        cfg = self.text_config
        rope = getattr(cfg, "rope_scaling", None) or getattr(cfg, "rope_parameters", None)
        return position_limit(getattr(cfg, "max_position_embeddings", None), rope)

    # ---- borrowed modules ----------------------------------------------------------------

    def embedding_rows(self, input_ids: torch.Tensor) -> torch.Tensor:
        # [B, T] -> [B, T, E]; the raw table, bypassing e.g. Gemma's scaled embedding module
        return F.embedding(input_ids, self._embedding.weight)

    # ---- running -------------------------------------------------------------------------

    def new_cache(self, static_length: Optional[int] = None) -> Any:
        if static_length is not None:
            return self._static_cache(static_length)
        from transformers import DynamicCache

        if hasattr(DynamicCache, "activate_past_recording"):
            # transformers 5: per-layer classes from the config; sliding-window layers keep their
            # past until the next crop, so a rollback past the window stays exact.
            cache = DynamicCache(config=self.config)
            cache.activate_past_recording()
            return cache
        # Older releases: a plain full cache (croppable everywhere); sliding layers still attend
        # within their window through the model's mask.
        return DynamicCache()

    def _static_cache(self, length: int) -> Any:
        """transformers' StaticCache for `length` positions: the keys always span all of them, the ones
        past the committed tokens hidden by the causal mask (cache positions after the query's), and a
        rollback only moves each layer's write position back (`cumulative_length`, a tensor, as
        StaticLayer.crop does in transformers 5.25 `cache_utils.py:510-521`; 5.17 has the same counter,
        `cache_utils.py:417`, but no crop), so the next forward overwrites the rejected positions."""
        try:
            from transformers.cache_utils import StaticCache, StaticLayer
        except ImportError:  # pragma: no cover - every supported release has them
            raise RuntimeUnsupportedError("a static cache needs transformers' StaticCache (transformers 5)") from None
        try:
            cache = StaticCache(config=self.config, max_cache_len=length)
        except (TypeError, ValueError, KeyError) as exc:
            raise RuntimeUnsupportedError(f"target ({self.name} adapter): transformers' StaticCache does not take "
                                          f"its config ({one_line(exc)}); use the dynamic cache") from None
        layers = getattr(cache, "layers", None) or []
        plain = [type(layer) is StaticLayer and isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)
                 for layer in layers]
        if not layers or not all(plain):
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): a static cache rolls back full-attention layers only (this target has "
                "sliding-window or other layers); use the dynamic cache")
        cache._dflash_static = True  # rolled back by rollback() below, never by crop
        return cache

    def new_plain_cache(self, static_length: Optional[int] = None) -> Any:
        # no past recording: sliding-window layers keep just their window, and nothing is cropped
        if static_length is not None:
            return self._static_cache(static_length)
        if type(self).new_cache is not TorchTarget.new_cache:  # a subclass's own cache
            return self.new_cache()
        from transformers import DynamicCache

        return DynamicCache(config=self.config) if hasattr(DynamicCache, "activate_past_recording") else DynamicCache()

    def use_graphs(self, block_length: int, compile_fn: Any = None) -> None:
        """Run every verify block of `block_length` positions through torch.compile(mode="reduce-overhead"):
        CUDA graphs, one shape, as transformers' own static-cache generate compiles its decode step
        (with the static cache the key length never changes). Other lengths (the prefill, a shorter last
        block) run eagerly. Capture hooks become persistent (registering hooks per call would retrace).
        `compile_fn`: the compiler (tests pass torch.compile with backend="eager" on CPU)."""
        if self._graphed is None:
            compile_fn = compile_fn or (lambda m: torch.compile(m, mode="reduce-overhead", dynamic=False))
            self._graphed = compile_fn(self.model)
        self._graph_length = block_length

    def forward(self, input_ids: torch.Tensor, cache: Any, start: int, *, capture: Sequence[int] = (),
                logits_to_keep: int = 0) -> TargetOutput:
        # input_ids [B, T] at positions start .. start+T-1
        self.check_capture(capture)
        length = input_ids.shape[1]
        position_ids = torch.arange(start, start + length, device=input_ids.device)[None]  # [1, T]
        kwargs = {"position_ids": position_ids, self._cache_kwarg: cache, "use_cache": True}
        if logits_to_keep and self._keep_kwarg:
            kwargs[self._keep_kwarg] = logits_to_keep
        if getattr(self, "_graphed", None) is not None:
            return self._graph_forward(input_ids, cache, start, kwargs, capture, logits_to_keep)
        if self._applications is not None:
            out = self.model(input_ids, output_hidden_states=bool(capture), **kwargs)
            logits = out.logits if logits_to_keep == 0 or self._keep_kwarg else out.logits[:, -logits_to_keep:]
            features = torch.cat([out.hidden_states[i + 1] for i in capture], dim=-1) if capture else None
            return TargetOutput(logits, features)
        with self._capture(capture) as captured:
            out = self.model(input_ids, **kwargs)
        logits = out.logits if logits_to_keep == 0 or self._keep_kwarg else out.logits[:, -logits_to_keep:]
        if not capture:
            return TargetOutput(logits, None)
        if captured["filled"] != len(capture):
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): the hooks on layers {list(capture)} did not all run; "
                "its decoder layers are not where the adapter looks"
            )
        return TargetOutput(logits, captured["features"])  # [B, T, L*H]

    def _graph_forward(self, input_ids: torch.Tensor, cache: Any, start: int, kwargs: dict[str, Any],
                       capture: Sequence[int], logits_to_keep: int) -> TargetOutput:
        """forward() once use_graphs() is on: blocks of the graphed length after the prefill, on a static
        cache, through the compiled model; everything else (the prefill above all) eagerly; features from
        the persistent hooks. The outputs are cloned: a CUDA graph's outputs are overwritten by its next
        replay."""
        state = self._graph_state
        for i in capture:
            if i not in self._graph_hooks:
                self._graph_hooks[i] = self._layers[i].register_forward_hook(
                    lambda _m, _a, output, i=i: self._graph_hook(i, output))
        state["want"], state["features"], state["filled"] = tuple(capture), None, 0
        graphed = getattr(cache, "_dflash_static", False) and input_ids.shape[1] == self._graph_length and start > 0
        if graphed and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
            torch.compiler.cudagraph_mark_step_begin()
        out = (self._graphed if graphed else self.model)(input_ids, **kwargs)
        logits = out.logits if logits_to_keep == 0 or self._keep_kwarg else out.logits[:, -logits_to_keep:]
        features, filled = state["features"], state["filled"]
        state["want"], state["features"] = (), None
        if graphed:
            logits = logits.clone()
            features = features.clone() if features is not None else None
        if not capture:
            return TargetOutput(logits, None)
        if filled != len(capture):
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): the hooks on layers {list(capture)} did not all run; "
                "its decoder layers are not where the adapter looks")
        return TargetOutput(logits, features)

    def _graph_hook(self, layer_id: int, output: Any) -> None:
        state = self._graph_state
        want = state["want"]
        if layer_id not in want:
            return
        h = layer_output(output)  # [B, T, H]
        width = h.shape[-1]
        if state["features"] is None:
            state["features"] = h.new_empty(*h.shape[:-1], len(want) * width)
        slot = want.index(layer_id)
        state["features"][..., slot * width:(slot + 1) * width] = h
        state["filled"] += 1

    @contextmanager
    def _capture(self, layer_ids: Sequence[int]) -> Iterator[dict[str, Any]]:
        """Forward hooks on just the requested layers. Each copies its layer's output [B, T, H] into
        its slot of one [B, T, L*H] buffer, so no layer's output outlives the forward and no
        concatenation doubles the memory at the end."""
        captured: dict[str, Any] = {"features": None, "filled": 0}
        handles = []
        for slot, i in enumerate(layer_ids):

            def hook(_module, _args, output, slot=slot):
                h = layer_output(output)  # [B, T, H]
                width = h.shape[-1]
                if captured["features"] is None:
                    captured["features"] = h.new_empty(*h.shape[:-1], len(layer_ids) * width)
                captured["features"][..., slot * width:(slot + 1) * width] = h
                captured["filled"] += 1

            handles.append(self._layers[i].register_forward_hook(hook))
        try:
            yield captured
        finally:
            for h in handles:
                h.remove()

    @property
    def num_layers(self) -> int:
        return self._applications if self._applications is not None else len(self.layers)

    def check_capture(self, capture: Sequence[int]) -> None:
        if self._applications is None:
            return super().check_capture(capture)
        for i in capture:
            if not 0 <= i < self._applications:
                raise RuntimeUnsupportedError(
                    f"target layer id {i} is out of range: the target applies its layers {self._applications} times")

    def cache_length(self, cache: Any) -> int:
        return int(cache.get_seq_length())

    def rollback(self, cache: Any, length: int) -> None:
        remove = self.positions_to_drop(self.cache_length(cache), length)
        if getattr(cache, "_dflash_static", False):  # a static cache: move the write positions back
            if remove:
                for layer in cache.layers:
                    if layer.is_initialized:
                        layer.cumulative_length.sub_(remove)
            return
        # A negative crop means "remove that many" in every transformers release; crop(0) is a
        # no-op (that trims sliding layers back to their window) only where the cache records its
        # past (transformers 5) -- older releases read crop(0) as "keep 0 positions".
        if getattr(cache, "is_croppable", True) is False:  # transformers 5 knows (e.g. a recurrent layer)
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): its cache reports that cropping cannot undo the rejected tokens"
            )
        if remove or hasattr(cache, "activate_past_recording"):
            cache.crop(-remove)


def target_for(model: nn.Module, *, adapter: Optional[str] = None) -> TorchTarget:
    """A loaded transformers model as the runtime's target, through its adapter: a built-in one
    chosen by `config.model_type`, else the default adapter (standard causal LMs and VLM wrappers);
    `adapter` (--adapter FILE_OR_NAME): a shim file from `dflash-check adapt`, or a built-in name."""
    return TorchTarget(torch_adapter_for(model, adapter))


def load_target(
    ref: Union[str, Path],
    *,
    device: Union[str, torch.device] = "cpu",
    dtype: torch.dtype = torch.float32,
    trust_remote_code: bool = False,
    token: Optional[str] = None,
    adapter: Optional[str] = None,
) -> TorchTarget:
    """Load a transformers target (folder or Hub id; safetensors only, checked) and run it through
    its adapter (`adapter`: a shim file or built-in adapter name; default: chosen by model_type)."""
    import transformers
    from transformers import AutoModelForCausalLM

    folder = target_folder(ref, token=token, trust_remote_code=trust_remote_code)
    major_minor = tuple(int(p) for p in transformers.__version__.split(".")[:2])
    kwargs = {"dtype" if major_minor >= (4, 56) else "torch_dtype": dtype,
              "use_safetensors": True, "trust_remote_code": trust_remote_code}
    loaders = [AutoModelForCausalLM]
    try:
        from transformers import AutoModelForImageTextToText  # VLM wrappers

        loaders.append(AutoModelForImageTextToText)
    except ImportError:  # pragma: no cover - old transformers
        pass
    from safetensors import SafetensorError

    try:
        from huggingface_hub.errors import StrictDataclassError  # transformers 5's config validation
    except ImportError:  # pragma: no cover - older huggingface_hub
        StrictDataclassError = ConfigError  # never raised by transformers there
    model, info, errors = None, None, []
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # our one-line error replaces its load report
    try:
        for loader in loaders:
            try:
                model, info = loader.from_pretrained(str(folder), output_loading_info=True, **kwargs)
                break
            except ValueError as exc:
                text = str(exc)
                if "trust_remote_code" in text and not trust_remote_code:
                    raise RemoteCodeError(f"target {ref}: the model needs its repository's own code; "
                                          "pass --trust-remote-code if you trust it") from None
                errors.append(one_line(exc, 200))
            except StrictDataclassError as exc:
                raise ConfigError(f"target {ref}: transformers refuses its config.json ({one_line(exc)})") from None
            except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
                # transformers' config classes on a value of an unexpected type (a config the specs accept)
                raise ConfigError(f"target {ref}: transformers cannot build the model from its config.json "
                                  f"({error_line(exc)})") from None
            except (OSError, SafetensorError) as exc:  # unreadable / truncated files
                raise WeightsError(f"target {ref}: cannot load its weights ({one_line(exc)})") from None
            except RuntimeError as exc:
                if "mismatch" not in str(exc):
                    raise
                raise WeightsError(
                    f"target {ref}: checkpoint tensors have other shapes than its config.json implies "
                    "(size mismatch); the weights do not belong to this config"
                ) from None
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    if model is None:
        raise RuntimeUnsupportedError(f"target {ref}: transformers cannot load it as a causal LM ({'; '.join(errors)})")
    _check_loading_info(ref, info)
    return target_for(model.to(device).eval(), adapter=adapter)


def _check_loading_info(ref, info) -> None:
    """Missing or mismatched target weights would be filled with random values: refuse them.
    transformers has already dropped the keys it expects to be absent (tied heads, ignore lists)."""
    info = info or {}
    missing = sorted(str(k) for k in info.get("missing_keys") or ())
    mismatched = sorted(str(k[0] if isinstance(k, (tuple, list)) else k) for k in info.get("mismatched_keys") or ())
    problems = info.get("error_msgs") or []
    parts = []
    for label, keys in (("missing", missing), ("mismatched", mismatched)):
        if keys:
            parts.append(f"{label} {', '.join(keys[:5])}{f' (+{len(keys) - 5} more)' if len(keys) > 5 else ''}")
    if problems:
        parts.append(" ".join(str(problems[0]).split())[:300] or "a loading error")
    if parts:
        raise WeightsError(f"target {ref}: the checkpoint does not hold every weight its config.json needs "
                           f"({'; '.join(parts)}); transformers would fill them with random values")
