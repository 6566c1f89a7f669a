"""The MLX layout adapters: one class that follows a `Layout`'s dotted paths, and one subclass per row of
`layouts.MLX_LAYOUTS` (named as the table says, e.g. MLXGPT2Adapter)."""

from __future__ import annotations

from functools import reduce
from typing import Any, Optional

import mlx.nn as nn

from dflash_compat.adapters.layouts import MLX_LAYOUTS, Layout
from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

__all__ = ["MLXLayoutAdapter", "ADAPTERS"]


def _follow(model: Any, path: Optional[str]) -> Any:
    return reduce(getattr, path.split("."), model) if path else None


class MLXLayoutAdapter(MLXDefaultAdapter):
    """An mlx-lm model whose pieces sit at a built-in layout's paths; a tied layout without a head module uses
    the embedding's as_linear."""

    layout: Layout

    @property
    def embed_tokens(self) -> nn.Module:
        return _follow(self.model, self.layout.embed)

    @property
    def decoder_layers(self) -> list:
        return _follow(self.model, self.layout.layers)

    @property
    def norm(self) -> Optional[nn.Module]:
        return _follow(self.model, self.layout.norm)

    @property
    def lm_head(self) -> Any:
        if not self.layout.tied:
            return _follow(self.model, self.layout.head)
        parent, _, attr = self.layout.head.rpartition(".")
        head = getattr(_follow(self.model, parent) if parent else self.model, attr, None)
        return head or self.embed_tokens.as_linear


ADAPTERS: dict[str, type] = {
    layout.cls: type(layout.cls, (MLXLayoutAdapter,), {"layout": layout, "name": layout.name, "__doc__": layout.doc,
                                                       "__module__": __name__})
    for layout in MLX_LAYOUTS.values()
}


def __getattr__(name: str) -> type:  # `registry.load_class("...mlx_layouts:MLXGPT2Adapter")`
    try:
        return ADAPTERS[name]
    except KeyError:
        raise AttributeError(name) from None
