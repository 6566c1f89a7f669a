"""DF807: the draft's mask token, as llama.cpp reads it, is missing or outside the vocabulary."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import CONVERT, cite, draft_is_gguf, gguf_loc, src
from dflash_compat.specs import get_dotted

KEY = "tokenizer.ggml.mask_token_id"


def check(ctx: RuleContext):
    d = ctx.draft
    fail = f"every draft batch then fails validation (\"invalid token[i] = ...\", {cite(ctx, 'invalid_token')})"
    abort = ("-1 is LLAMA_TOKEN_NULL, so the first draft block aborts llama-server (\"get_sub_batch: failed to add "
             f"embedding\", {cite(ctx, 'mask_null_abort')})")
    if draft_is_gguf(ctx):
        mask = d.gguf.get(KEY)
        vocab = d.gguf.vocab_count
        if not is_int(mask):
            yield Violation(f"the draft GGUF has no {KEY}: llama.cpp uses -1 as the mask token "
                            f"({cite(ctx, 'mask_token_read')}); {abort}", [gguf_loc(ctx, "draft", KEY)])
        elif mask < 0 or (vocab is not None and mask >= vocab):
            yield Violation(f"{KEY} = {mask} is outside the draft's vocabulary of {vocab} tokens: {fail}",
                            [gguf_loc(ctx, "draft", KEY)])
        return
    if d.is_speculators:
        return  # the converter's DSpark path maps speculators' top-level mask_token_id itself
    nested = get_dotted(d.raw, "dflash_config.mask_token_id")
    if is_int(nested):
        return
    top = "" if d.mask_token_id is None else f" (the top-level mask_token_id {d.mask_token_id} is not read)"
    yield Violation(
        f"the draft config has no dflash_config.mask_token_id{top}: {CONVERT} writes {KEY} only from it "
        f"({cite(ctx, 'converter_mask')}), so llama.cpp uses -1; {abort}",
        [ctx.dloc("mask_token_id", "dflash_config.mask_token_id")],
    )


RULE = Rule(
    code="DF807",
    name="llamacpp-mask-token-invalid",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF holds `tokenizer.ggml.mask_token_id` inside its vocabulary; a checkpoint names it in "
    "dflash_config.mask_token_id, the only place the converter reads it.",
    why="llama.cpp fills every draft block with the mask token it reads from the draft's vocabulary, -1 when the "
    "key is absent. -1 is llama.cpp's null token, which its batch builder takes for an embedding entry: the server "
    "aborts at the first draft (measured with b11434). Any other id outside 0..n_vocab-1 fails batch validation, "
    "so nothing is speculated.",
    example='draft {"mask_token_id": 151669, "dflash_config": {"target_layer_ids": [1, 9]}} (mask at the top level)',
    fix="Put the mask token id in dflash_config.mask_token_id before converting (or add tokenizer.ggml.mask_token_id "
    "to the GGUF).",
    sources=(src("mask_token_read"), src("mask_token_key"), src("mask_null_abort"), src("invalid_token"),
             src("converter_mask")),
)
