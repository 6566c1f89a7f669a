"""DF412: SGLang's --speculative-dflash-block-size and --speculative-num-draft-tokens differ."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    o = ctx.options
    n, bs = o.sglang_num_draft_tokens, o.sglang_dflash_block_size
    if n is None or bs is None or n == bs:
        return
    yield Violation(
        f"--speculative-dflash-block-size {bs} != --speculative-num-draft-tokens {n}: SGLang stops at start-up "
        "(\"Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ\")",
    )


RULE = Rule(
    code="DF412",
    name="sglang-block-size-flags-disagree",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("dflash_block_size", "num_draft_tokens"),
    what="When both are given, `--speculative-dflash-block-size` equals `--speculative-num-draft-tokens`.",
    why="For DFLASH the block-size flag is an alias of the number of draft tokens (the block length including "
    "the anchor); SGLang refuses two different values.",
    example="--speculative-dflash-block-size 16 --speculative-num-draft-tokens 15",
    fix="Give only one of the two flags, set to the draft's block_size.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "368-387", "the two must match"),
    ),
)
