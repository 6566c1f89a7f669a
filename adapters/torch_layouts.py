"""The PyTorch layout adapters: one class that follows a `Layout`'s dotted paths, and one subclass per row of
`layouts.TORCH_LAYOUTS` (named as the table says, e.g. GPT2Adapter)."""

from __future__ import annotations

from functools import reduce
from typing import Any, Optional

from torch import nn

from dflash_compat.adapters.layouts import TORCH_LAYOUTS, Layout
from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["TorchLayoutAdapter", "ADAPTERS"]


def _follow(model: Any, path: Optional[str]) -> Any:
    """The attribute at a dotted path (each step an attribute lookup: layouts only map)."""
    return reduce(getattr, path.split("."), model) if path else None


class TorchLayoutAdapter(TorchDefaultAdapter):
    """A transformers model whose pieces sit at a built-in layout's paths; what the layout leaves out (a head
    at None) is found by the default lookup."""

    layout: Layout

    @property
    def embed_tokens(self) -> nn.Module:
        return _follow(self.model, self.layout.embed)

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return _follow(self.model, self.layout.layers)

    @property
    def norm(self) -> Optional[nn.Module]:
        return _follow(self.model, self.layout.norm)

    @property
    def lm_head(self) -> Optional[nn.Module]:
        if self.layout.head is None:
            return super().lm_head
        return _follow(self.model, self.layout.head)

    @property
    def project_in(self) -> Optional[nn.Module]:
        return _follow(self.model, self.layout.project_in)

    @property
    def project_out(self) -> Optional[nn.Module]:
        return _follow(self.model, self.layout.project_out)


ADAPTERS: dict[str, type] = {
    layout.cls: type(layout.cls, (TorchLayoutAdapter,), {"layout": layout, "name": layout.name, "__doc__": layout.doc,
                                                         "__module__": __name__})
    for layout in TORCH_LAYOUTS.values()
}


def __getattr__(name: str) -> type:  # `registry.load_class("...torch_layouts:GPT2Adapter")`
    try:
        return ADAPTERS[name]
    except KeyError:
        raise AttributeError(name) from None
