"""mlx-lm InternLM2 layout: model.tok_embeddings / model.layers / model.norm, head output."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXInternLM2Adapter"]


class MLXInternLM2Adapter(MLXDefaultAdapter):
    """mlx-lm `internlm2`: the head is `output`, or the tied `tok_embeddings`."""

    name = "internlm2"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.tok_embeddings

    @property
    def decoder_layers(self) -> list:
        return self.model.model.layers

    @property
    def norm(self) -> nn.Module:
        return self.model.model.norm

    @property
    def lm_head(self) -> Any:
        return getattr(self.model, "output", None) or self.embed_tokens.as_linear
