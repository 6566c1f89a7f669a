"""The default PyTorch adapter: standard transformers causal LMs and VLM wrappers (Qwen3, Llama, Qwen2.5-VL, ...)."""

from __future__ import annotations

from typing import Any, Optional

from torch import nn

from dflash_compat.adapters.base import TargetAdapter
from dflash_compat.exceptions import RuntimeUnsupportedError

__all__ = ["TorchDefaultAdapter"]


class TorchDefaultAdapter(TargetAdapter):
    """Finds the pieces with the one module locator the deep check uses (adapters/locate.py):
    get_input_embeddings(), lm_head or get_output_embeddings(), the decoder's block list (Llama
    `model.layers`, GPT-2/CTRL `transformer.h`, DBRX `transformer.blocks`, BERT `bert.encoder.layer`,
    ...); the text config via get_text_config()."""

    name = "torch-default"

    def __init__(self, model: nn.Module) -> None:
        config = getattr(model, "config", None)
        if config is None:
            raise RuntimeUnsupportedError("target: not a transformers model (no .config); write an adapter for it")
        super().__init__(model, config)
        self._located: Any = None

    @property
    def located(self) -> Any:
        """The shared locator's answer for this model (computed once)."""
        if self._located is None:
            from dflash_compat.adapters.locate import locate_modules

            self._located = locate_modules(self.model)
        return self._located

    @property
    def text_config(self) -> Any:
        """The language model's config (a VLM's text_config; the config itself otherwise)."""
        config = self.config
        return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config

    # ---- where the pieces live (a built-in layout adapter overrides these) --------------------

    @property
    def embed_tokens(self) -> Optional[nn.Module]:
        return self.located.embed

    @property
    def lm_head(self) -> Optional[nn.Module]:
        head = getattr(self.model, "lm_head", None)  # the locator's first choice too (a path for layout_paths)
        return head if head is not None else self.located.head

    @property
    def norm(self) -> Optional[nn.Module]:
        path = self.located.norm_path
        return self.model.get_submodule(path) if path else None

    @property
    def decoder_layers(self) -> nn.ModuleList:
        layers = self.located.layers
        if isinstance(layers, nn.ModuleList) and len(layers) > 0:
            return layers
        raise RuntimeUnsupportedError(
            f"target ({type(self.model).__name__}): no decoder layers found (no block list of the config's "
            "layer count); this layout needs its own adapter (dflash-check adapt)"
        )
