"""DF110: the draft's vocabulary size differs from the target's."""

from __future__ import annotations

from dflash_compat.checker import BACKENDS, EngineSource, Rule, RuleContext, Violation, located
from dflash_compat.rules._sources import (
    HF_NATIVE_SETUP,
    MLX_BIND,
    REF_EMBED,
    REF_V2,
    SGL_EMBED,
    VLLM_SHARE_EMBED,
    VLLM_V2_SHARE_EMBED,
)

# llama.cpp drafts with the target's embeddings and output head: a larger draft vocabulary is only padding there
_NOT_LLAMA = tuple(b for b in BACKENDS if b != "llama.cpp")


def check(ctx: RuleContext):
    t, d = ctx.target.vocab_size, ctx.draft.vocab_size
    if t is None or d is None or t == d:
        return
    locs = [ctx.dloc("vocab_size"), ctx.tloc("vocab_size")]
    message = f"draft vocab_size {d} != target vocab_size {t}: the draft predicts over the target's embedding rows"
    if d < t:
        yield Violation(message, locs)
        return
    yield Violation(message, locs, backends=_NOT_LLAMA)
    llama = ctx.engine("llama.cpp")
    if not llama.feature("dflash"):
        return  # a build without DFlash: DF012
    yield Violation(
        f"draft vocab_size {d} > target vocab_size {t}: llama.cpp {llama.version} drafts with the target's token "
        f"embeddings and output head ({llama.where('draft_target_embd').cite()}, "
        f"{llama.where('draft_target_head').cite()}) and its converter gives the draft the target's tokenizer, "
        f"padded to {d} ({llama.where('converter_vocab_size').cite()}), so it runs; the draft proposes well only "
        "if it was trained on this target's tokenizer (the extra rows then are padding)",
        locs, backends=("llama.cpp",), severity="warning",
    )


RULE = Rule(
    code="DF110",
    name="vocab-size-mismatch",
    severity="error",
    backends=BACKENDS,
    check=check,
    what="The draft's `vocab_size` equals the target's (embedding rows, `text_config.vocab_size` for VLMs); for "
    "llama.cpp, a larger draft vocabulary is a warning.",
    why="The draft embeds with the target's embedding table and projects with its output head, so its logits are "
    "over the target's vocabulary; a different size means another tokenizer, and DFlash 2's selector codebooks "
    "(`vocab x rank`, sized from the draft's vocab_size) cannot be indexed with the target's token ids. llama.cpp "
    "takes both tensors from the target and gives a converted draft the target's tokenizer padded to the draft's "
    "vocab_size, so a draft whose vocabulary is a superset of the target's runs there (the demo pair with a larger "
    "draft vocab_size ran at the good pair's acceptance); a smaller one stops the converter.",
    example='target {"vocab_size": 152064}, draft {"vocab_size": 151936}',
    fix="Use a draft trained for this target's tokenizer; a draft's vocabulary cannot be remapped.",
    sources=(REF_EMBED, REF_V2, MLX_BIND, HF_NATIVE_SETUP, VLLM_SHARE_EMBED, VLLM_V2_SHARE_EMBED, SGL_EMBED,
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/proposers/dflash.py", "35-36",
                          "the draft uses the target's embedding module"),
             located("llama.cpp", "draft_target_embd"),
             located("llama.cpp", "draft_target_head"), located("llama.cpp", "converter_vocab_size")),
)
