"""The adapter interface: where a target model keeps the pieces a DFlash draft borrows.

An adapter maps, it does not run or decide: a set of `@property` passthroughs, one class per
layout, chosen by model_type (registry.py). The runtime (`dflash_compat.runtime.torch_target` /
`mlx_target`) builds its forward, cache and rollback on top of these:

    embed_tokens        the input embedding module (its raw rows are what the draft embeds)
    lm_head             the output head module (or the tied embedding's as_linear, in MLX)
    decoder_layers      the decoder layers, in order; index i == z-lab target layer id i
    norm                the final norm after the last layer, if the layout has one
    project_in          a projection after the embedding (OPT-350m), else None
    project_out         a projection before the head (OPT-350m), else None

`model` is the loaded model; `config` its config (a transformers config object, or mlx-lm's
config dict).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["TargetAdapter"]


class TargetAdapter:
    """Where the pieces live in one target layout. Subclass it per framework and per layout and
    override the properties that differ; a property that cannot find its piece raises
    RuntimeUnsupportedError (or returns None where the piece is optional)."""

    #: Short name shown in reports (e.g. "torch-default", "mlx-default", "gpt2").
    name: str = "base"

    def __init__(self, model: Any, config: Any = None) -> None:
        self.model = model
        self.config = config

    @property
    def embed_tokens(self) -> Any:
        raise NotImplementedError

    @property
    def lm_head(self) -> Any:
        raise NotImplementedError

    @property
    def decoder_layers(self) -> Any:
        raise NotImplementedError

    @property
    def norm(self) -> Optional[Any]:
        return None

    @property
    def project_in(self) -> Optional[Any]:
        return None

    @property
    def project_out(self) -> Optional[Any]:
        return None
