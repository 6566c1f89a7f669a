"""mlx-lm OpenELM layout: transformer.token_embeddings / transformer.layers / transformer.norm."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXOpenELMAdapter"]


class MLXOpenELMAdapter(MLXDefaultAdapter):
    """mlx-lm `openelm`: `lm_head`, or the tied `token_embeddings` when share_input_output_layers."""

    name = "openelm"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.transformer.token_embeddings

    @property
    def decoder_layers(self) -> list:
        return self.model.transformer.layers

    @property
    def norm(self) -> nn.Module:
        return self.model.transformer.norm

    @property
    def lm_head(self) -> Any:
        return getattr(self.model, "lm_head", None) or self.embed_tokens.as_linear
