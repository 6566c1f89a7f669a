"""mlx-lm PLaMo layout: model.embed_tokens / model.layers.layers / model.norm."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXPlamoAdapter"]


class MLXPlamoAdapter(MLXDefaultAdapter):
    """mlx-lm `plamo`: `model.layers` is a PlamoDecoder module holding the list at `.layers`; the default lookup would take the module itself for the layer list."""

    name = "plamo"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.embed_tokens

    @property
    def decoder_layers(self) -> list:
        return self.model.model.layers.layers

    @property
    def norm(self) -> nn.Module:
        return self.model.model.norm

    @property
    def lm_head(self) -> Any:
        return self.model.lm_head
