"""mlx-lm GPTBigCode / Qwen (v1) / EXAONE layout: transformer.wte / transformer.h / transformer.ln_f."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXGPTBigCodeAdapter"]


class MLXGPTBigCodeAdapter(MLXDefaultAdapter):
    """mlx-lm `gpt_bigcode`, `qwen` and `exaone`: `lm_head`, or the tied `wte` when tie_word_embeddings."""

    name = "gpt-bigcode"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.transformer.wte

    @property
    def decoder_layers(self) -> list:
        return self.model.transformer.h

    @property
    def norm(self) -> nn.Module:
        return self.model.transformer.ln_f

    @property
    def lm_head(self) -> Any:
        return getattr(self.model, "lm_head", None) or self.embed_tokens.as_linear
