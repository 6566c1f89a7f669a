"""mlx-lm GPT-NeoX layout: model.embed_in / model.h / model.final_layer_norm, head model.embed_out."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXGPTNeoXAdapter"]


class MLXGPTNeoXAdapter(MLXDefaultAdapter):
    """mlx-lm `gpt_neox`: the head lives inside the decoder (`model.embed_out`), where the DFlash MLX loader does not look; it would fall back to `embed_in.as_linear`, a different matrix."""

    name = "gpt-neox"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.embed_in

    @property
    def decoder_layers(self) -> list:
        return self.model.model.h

    @property
    def norm(self) -> nn.Module:
        return self.model.model.final_layer_norm

    @property
    def lm_head(self) -> Any:
        return self.model.model.embed_out
