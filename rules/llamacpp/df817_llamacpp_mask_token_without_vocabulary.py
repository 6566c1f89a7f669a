"""DF817: a drafter GGUF without a vocabulary whose mask token llama.cpp never reads."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation, located
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import (
    DFLASH_BUILDS,
    cite,
    draft_is_gguf,
    facts,
    gguf_loc,
    null_mask_outcome,
)

KEY = "tokenizer.ggml.mask_token_id"


def check(ctx: RuleContext):
    if not draft_is_gguf(ctx):
        return  # the converter writes the target's vocabulary into a DFlash draft
    d = ctx.draft
    model = d.gguf.get("tokenizer.ggml.model")
    none = facts(ctx)["vocab_none"]  # src/llama-vocab.cpp at the build judged
    mask = d.gguf.get(KEY)
    if model not in none["models"] or none["reads_special_tokens"] or not is_int(mask):
        return  # a vocabulary llama.cpp reads special tokens for; or no mask id at all (DF807)
    yield Violation(
        f"the draft GGUF has no vocabulary (tokenizer.ggml.model = {quote(model)}) and keeps its mask token only in "
        f"{KEY} = {mask}: llama.cpp {ctx.engine('llama.cpp').version} returns before it reads the special tokens of "
        f"such a vocabulary ({cite(ctx, 'vocab_none_return')}; the mask key is read at "
        f"{cite(ctx, 'vocab_special_tokens')}), so the draft's mask token is -1; {null_mask_outcome(ctx)}",
        [gguf_loc(ctx, "draft", "tokenizer.ggml.model"), gguf_loc(ctx, "draft", KEY)],
    )


RULE = Rule(
    code="DF817",
    name="llamacpp-mask-token-without-vocabulary",
    severity="error",
    backends=("llama.cpp",),
    versions=DFLASH_BUILDS,
    check=check,
    what="A draft GGUF that names its mask token (`tokenizer.ggml.mask_token_id`) has a vocabulary llama.cpp "
    "reads special tokens for: `tokenizer.ggml.model` other than `none` / `no_vocab`.",
    why="A drafter that borrows the target's embeddings can be written without a vocabulary. llama.cpp's vocabulary "
    "loader sets every special token of such a GGUF to -1 and returns before the keys that name them are read "
    "(every build from b9113 to b11434), so the mask id the file holds is never seen: the draft blocks are filled "
    "with -1 and decoding fails (llama.cpp #26761).",
    example="draft GGUF: tokenizer.ggml.model = none, tokenizer.ggml.mask_token_id = 151669",
    fix="Write the target's vocabulary into the draft (convert_hf_to_gguf.py --target-model-dir TARGET does), so "
    "that the mask id is read.",
    sources=(located("llama.cpp", "vocab_none_return"), located("llama.cpp", "vocab_special_tokens"),
             located("llama.cpp", "mask_token_read")),
)
