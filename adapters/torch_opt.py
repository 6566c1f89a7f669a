"""OPT layout: model.decoder.embed_tokens / model.decoder.layers, with project_in / project_out when present."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .torch_default import TorchDefaultAdapter

__all__ = ["OPTAdapter"]


class OPTAdapter(TorchDefaultAdapter):
    """`OPTForCausalLM`. When `word_embed_proj_dim` != `hidden_size` (OPT-350m) the embedding is
    narrower than the decoder: `project_in` widens it before layer 0 and `project_out` narrows the
    decoder output before `lm_head`. The draft works at the decoder width, so `embed` and `head`
    include the projections; they are None (and skipped) in every other OPT."""

    name = "opt"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.model.decoder.embed_tokens

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return self.model.model.decoder.layers

    @property
    def norm(self) -> Optional[nn.Module]:
        return self.model.model.decoder.final_layer_norm  # None when do_layer_norm_before is False

    @property
    def project_in(self) -> Optional[nn.Module]:
        return self.model.model.decoder.project_in

    @property
    def project_out(self) -> Optional[nn.Module]:
        return self.model.model.decoder.project_out

    @property
    def lm_head(self) -> nn.Module:
        return self.model.lm_head

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        rows = super().embed(input_ids)  # [B, T] -> [B, T, word_embed_proj_dim]
        proj = self.project_in
        return rows if proj is None else proj(rows)  # -> [B, T, H]

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        proj = self.project_out
        return super().head(hidden if proj is None else proj(hidden))  # [B, T, H] -> [B, T, V]
