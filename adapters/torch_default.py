"""The default PyTorch adapter: standard transformers causal LMs and VLM wrappers (Qwen3, Llama, Qwen2.5-VL, ...)."""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from dflash_compat.contract import ATTENTION_LAYER_TYPES, RECURRENT_MODEL_TYPES
from dflash_compat.exceptions import RuntimeUnsupportedError

from .base import RollbackKind, TargetAdapter, TargetOutput, position_limit

__all__ = ["TorchDefaultAdapter", "layer_output"]


def layer_output(output: Any) -> torch.Tensor:
    """A decoder layer's hidden states: transformers 5 layers return a tensor, older ones a tuple."""
    return output[0] if isinstance(output, (tuple, list)) else output


class TorchDefaultAdapter(TargetAdapter):
    """Finds the pieces through the transformers API: get_input_embeddings(), lm_head or
    get_output_embeddings(), get_decoder().layers; the text config via get_text_config()."""

    name = "torch-default"

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        config = getattr(model, "config", None)
        if config is None:
            raise RuntimeUnsupportedError("target: not a transformers model (no .config); write an adapter for it")
        self.config = config
        self.text_config = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
        self._embedding = self.embed_tokens
        self._head = self.lm_head
        if self._embedding is None or self._head is None:
            raise RuntimeUnsupportedError(
                "target: no input embedding or output head found (get_input_embeddings / lm_head / "
                "get_output_embeddings); write an adapter for it (dflash-check adapt)"
            )
        self._layers = self.decoder_layers
        params = inspect.signature(model.forward).parameters
        # transformers >= 5.x names the cache `cache`; older releases (and many remote-code
        # models) take `past_key_values`.
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"
        self._keep_kwarg = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        self._kind, self._problem = _rollback_kind(self.text_config)

    # ---- where the pieces live (a built-in layout adapter overrides these three) ----------

    @property
    def embed_tokens(self) -> Optional[nn.Module]:
        return self.model.get_input_embeddings()

    @property
    def lm_head(self) -> Optional[nn.Module]:
        head = getattr(self.model, "lm_head", None)
        return head if head is not None else self.model.get_output_embeddings()

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return _find_layers(self.model)

    # ---- shape ---------------------------------------------------------------------------

    @property
    def layers(self) -> Sequence[nn.Module]:
        return self._layers

    @property
    def hidden_size(self) -> int:
        return int(getattr(self.text_config, "hidden_size", None) or self._embedding.weight.shape[1])

    @property
    def vocab_size(self) -> int:
        return int(self._embedding.weight.shape[0])

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

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        # [B, T] -> [B, T, H]; the raw table, bypassing e.g. Gemma's scaled embedding module
        return F.embedding(input_ids, self._embedding.weight)

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        # [B, T, H] -> [B, T, V]
        return self._head(hidden)

    # ---- running -------------------------------------------------------------------------

    def new_cache(self) -> Any:
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

    def new_plain_cache(self) -> Any:
        # no past recording: sliding-window layers keep just their window, and nothing is cropped
        if type(self).new_cache is not TorchDefaultAdapter.new_cache:  # a subclass's own cache
            return self.new_cache()
        from transformers import DynamicCache

        return DynamicCache(config=self.config) if hasattr(DynamicCache, "activate_past_recording") else DynamicCache()

    def forward(
        self,
        input_ids: torch.Tensor,
        cache: Any,
        start: int,
        *,
        capture: Sequence[int] = (),
        logits_to_keep: int = 0,
    ) -> TargetOutput:
        # input_ids [B, T] at positions start .. start+T-1
        length = input_ids.shape[1]
        position_ids = torch.arange(start, start + length, device=input_ids.device)[None]  # [1, T]
        kwargs = {"position_ids": position_ids, self._cache_kwarg: cache, "use_cache": True}
        if logits_to_keep and self._keep_kwarg:
            kwargs[self._keep_kwarg] = logits_to_keep
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

    @contextmanager
    def _capture(self, layer_ids: Sequence[int]) -> Iterator[dict[str, Any]]:
        """Forward hooks on just the requested layers (never output_hidden_states for all). Each
        copies its layer's output [B, T, H] into its slot of one [B, T, L*H] buffer, so no layer's
        output outlives the forward and no concatenation doubles the memory at the end."""
        captured: dict[str, Any] = {"features": None, "filled": 0}
        handles = []
        for slot, i in enumerate(layer_ids):
            if not 0 <= i < len(self._layers):
                raise RuntimeUnsupportedError(
                    f"target layer id {i} is out of range: the target has {len(self._layers)} decoder layers"
                )

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

    def cache_length(self, cache: Any) -> int:
        return int(cache.get_seq_length())

    def rollback(self, cache: Any, length: int) -> None:
        remove = self.cache_length(cache) - length
        if remove < 0:
            raise ValueError(f"cannot roll a cache of {length + remove} positions forward to {length}")
        # A negative crop means "remove that many" in every transformers release; crop(0) is a
        # no-op (that trims sliding layers back to their window) only where the cache records its
        # past (transformers 5) -- older releases read crop(0) as "keep 0 positions".
        if getattr(cache, "is_croppable", True) is False:  # transformers 5 knows (e.g. a recurrent layer)
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): its cache reports that cropping cannot undo the rejected tokens"
            )
        if remove or hasattr(cache, "activate_past_recording"):
            cache.crop(-remove)

    @property
    def rollback_kind(self) -> RollbackKind:
        return self._kind

    @property
    def rollback_problem(self) -> Optional[str]:
        return self._problem


def _find_layers(model: nn.Module) -> nn.ModuleList:
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    for owner in (decoder, getattr(model, "model", None), model):
        layers = getattr(owner, "layers", None) if owner is not None else None
        if isinstance(layers, nn.ModuleList) and len(layers) > 0:
            return layers
    raise RuntimeUnsupportedError(
        f"target ({type(model).__name__}): no decoder layers at get_decoder().layers; "
        "this layout needs its own adapter (dflash-check adapt)"
    )


def _rollback_kind(text_config: Any) -> tuple[RollbackKind, Optional[str]]:
    model_type = getattr(text_config, "model_type", None)
    if model_type in RECURRENT_MODEL_TYPES:
        return "none", f"{model_type} keeps a recurrent (SSM / linear-attention) state that cropping cannot undo"
    layer_types = getattr(text_config, "layer_types", None) or []
    other = sorted({t for t in layer_types if t not in ATTENTION_LAYER_TYPES})
    if other:
        return "none", f"layer types {other} keep a recurrent state that cropping cannot undo"
    return "crop", None
