"""GPT-2 layout (also GPT-J, GPT-Neo, CodeGen, GPTBigCode): transformer.wte / transformer.h / transformer.ln_f."""

from __future__ import annotations

from torch import nn

from dflash_compat.adapters.torch_default import TorchDefaultAdapter

__all__ = ["GPT2Adapter"]


class GPT2Adapter(TorchDefaultAdapter):
    """`*LMHeadModel` / `*ForCausalLM` with the decoder at `.transformer` and the blocks at `.h`.
    The head is `lm_head` (tied to `wte` in GPT-2, its own weights in GPT-J and CodeGen)."""

    name = "gpt2"

    @property
    def embed_tokens(self) -> nn.Module:
        return self.model.transformer.wte

    @property
    def decoder_layers(self) -> nn.ModuleList:
        return self.model.transformer.h

    @property
    def norm(self) -> nn.Module:
        return self.model.transformer.ln_f

    @property
    def lm_head(self) -> nn.Module:
        return self.model.lm_head
