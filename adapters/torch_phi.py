"""Phi (phi-1, phi-1.5, phi-2 in transformers): model.embed_tokens / model.layers / model.final_layernorm."""

from __future__ import annotations

from torch import nn

from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["PhiAdapter"]


class PhiAdapter(TorchDefaultAdapter):
    """`PhiForCausalLM`: the standard `model.*` names except the final norm (`final_layernorm`),
    and an `lm_head` with a bias."""

    name = "phi"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.embed_tokens

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return self.model.model.layers

    @property
    def norm(self) -> nn.Module:
        return self.model.model.final_layernorm

    @property
    def lm_head(self) -> nn.Module:
        return self.model.lm_head
