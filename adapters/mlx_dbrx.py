"""mlx-lm DBRX layout: transformer.wte / transformer.blocks / transformer.norm_f, lm_head."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXDBRXAdapter"]


class MLXDBRXAdapter(MLXDefaultAdapter):
    """mlx-lm `dbrx`."""

    name = "dbrx"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.transformer.wte

    @property
    def decoder_layers(self) -> list:
        return self.model.transformer.blocks

    @property
    def norm(self) -> nn.Module:
        return self.model.transformer.norm_f

    @property
    def lm_head(self) -> Any:
        return self.model.lm_head
