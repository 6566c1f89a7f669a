"""DF112: the mask token id is not a row of the target's embedding table."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_EMBED, REF_EMBED

SGL_MASK_RANGE = EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1400-1407",
                              "mask_token_id outside the target vocab: ValueError")


def check(ctx: RuleContext):
    m, v = ctx.draft.mask_token_id, ctx.target.vocab_size
    if m is None:
        return
    if m < 0:
        yield Violation(f"mask_token_id {m} is negative", [ctx.dloc("mask_token_id")])
    elif v is not None and m >= v:
        yield Violation(
            f"mask_token_id {m} is not below the target's vocab_size {v}: there is no embedding row for it",
            [ctx.dloc("mask_token_id"), ctx.tloc("vocab_size")],
        )


RULE = Rule(
    code="DF112",
    name="mask-token-out-of-range",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="0 <= `mask_token_id` < the target's `vocab_size`.",
    why="The mask positions are embedded with the TARGET's embedding table; an id past its last row fails at load "
    "(SGLang ValueError) or with an index error on the first draft step.",
    example='target {"vocab_size": 128256}, draft {"dflash_config": {"mask_token_id": 151669}}',
    fix="The draft was made for another tokenizer: use the draft trained for this target.",
    sources=(REF_EMBED, MLX_EMBED, SGL_MASK_RANGE),
)
