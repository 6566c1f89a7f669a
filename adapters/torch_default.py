"""The default PyTorch adapter: standard transformers causal LMs and VLM wrappers (Qwen3, Llama, Qwen2.5-VL, ...)."""

from __future__ import annotations

from typing import Any, Optional

from torch import nn

from dflash_compat.exceptions import RuntimeUnsupportedError

from .base import TargetAdapter

__all__ = ["TorchDefaultAdapter"]


class TorchDefaultAdapter(TargetAdapter):
    """Finds the pieces through the transformers API: get_input_embeddings(), lm_head or
    get_output_embeddings(), get_decoder().layers; the text config via get_text_config()."""

    name = "torch-default"

    def __init__(self, model: nn.Module) -> None:
        config = getattr(model, "config", None)
        if config is None:
            raise RuntimeUnsupportedError("target: not a transformers model (no .config); write an adapter for it")
        super().__init__(model, config)

    @property
    def text_config(self) -> Any:
        """The language model's config (a VLM's text_config; the config itself otherwise)."""
        config = self.config
        return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config

    # ---- where the pieces live (a built-in layout adapter overrides these) --------------------

    @property
    def embed_tokens(self) -> Optional[nn.Module]:
        return self.model.get_input_embeddings()

    @property
    def lm_head(self) -> Optional[nn.Module]:
        head = getattr(self.model, "lm_head", None)
        return head if head is not None else self.model.get_output_embeddings()

    @property
    def decoder_layers(self) -> nn.ModuleList:
        decoder = self.model.get_decoder() if hasattr(self.model, "get_decoder") else None
        for owner in (decoder, getattr(self.model, "model", None), self.model):
            layers = getattr(owner, "layers", None) if owner is not None else None
            if isinstance(layers, nn.ModuleList) and len(layers) > 0:
                return layers
        raise RuntimeUnsupportedError(
            f"target ({type(self.model).__name__}): no decoder layers at get_decoder().layers; "
            "this layout needs its own adapter (dflash-check adapt)"
        )
