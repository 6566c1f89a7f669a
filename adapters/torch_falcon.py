"""Falcon / Bloom layout: transformer.word_embeddings / transformer.h / transformer.ln_f."""

from __future__ import annotations

from torch import nn

from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["FalconAdapter"]


class FalconAdapter(TorchDefaultAdapter):
    """`FalconForCausalLM` and `BloomForCausalLM`. Bloom normalises the embedding inside its
    forward (`word_embeddings_layernorm`); like every adapter, `embed` gives the raw table rows
    (what `get_input_embeddings()` returns, and what the draft is trained on). Bloom takes no
    position_ids (ALiBi): it reads positions from the cache length, which the runtime keeps equal."""

    name = "falcon"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.transformer.word_embeddings

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return self.model.transformer.h

    @property
    def norm(self) -> nn.Module:
        return self.model.transformer.ln_f

    @property
    def lm_head(self) -> nn.Module:
        return self.model.lm_head
