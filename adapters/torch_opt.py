"""OPT layout: model.decoder.embed_tokens / model.decoder.layers, with project_in / project_out when present."""

from __future__ import annotations

from typing import Optional

from torch import nn

from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["OPTAdapter"]


class OPTAdapter(TorchDefaultAdapter):
    """`OPTForCausalLM`. When `word_embed_proj_dim` != `hidden_size` (OPT-350m) the embedding is
    narrower than the decoder: `project_in` widens it before layer 0 and `project_out` narrows the
    decoder output before `lm_head`. The draft works at the decoder width, so the runtime's `embed`
    and `head` apply the projections; they are None (and skipped) in every other OPT."""

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
