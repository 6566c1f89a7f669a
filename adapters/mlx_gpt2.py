"""mlx-lm GPT-2 / GPT-J layout: model.wte / model.h / model.ln_f."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXGPT2Adapter"]


class MLXGPT2Adapter(MLXDefaultAdapter):
    """mlx-lm `gpt2` (head tied to `wte`) and `gptj` (its own `lm_head`)."""

    name = "gpt2"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.wte

    @property
    def decoder_layers(self) -> list:
        return self.model.model.h

    @property
    def norm(self) -> nn.Module:
        return self.model.model.ln_f

    @property
    def lm_head(self) -> Any:
        return getattr(self.model, "lm_head", None) or self.embed_tokens.as_linear
