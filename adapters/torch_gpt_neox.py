"""GPT-NeoX layout (Pythia, GPT-NeoX-20B): gpt_neox.embed_in / gpt_neox.layers / gpt_neox.final_layer_norm."""

from __future__ import annotations

from torch import nn

from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["GPTNeoXAdapter"]


class GPTNeoXAdapter(TorchDefaultAdapter):
    """`GPTNeoXForCausalLM`: the head is `lm_head` in transformers 5 and `embed_out` in 4.x
    (the default lookup, `lm_head` else `get_output_embeddings()`, finds either)."""

    name = "gpt-neox"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.gpt_neox.embed_in

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return self.model.gpt_neox.layers

    @property
    def norm(self) -> nn.Module:
        return self.model.gpt_neox.final_layer_norm
