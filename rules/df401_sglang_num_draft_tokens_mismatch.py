"""DF401: SGLang's --speculative-num-draft-tokens differs from the draft's block size."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation


def check(ctx: CheckContext):
    n, bs = ctx.options.sglang_num_draft_tokens, ctx.draft.block_size
    if n is None or bs is None or n == bs:
        return
    hint = " (it counts the anchor: block_size, not block_size - 1)" if n == bs - 1 else ""
    yield Violation(
        f"--speculative-num-draft-tokens {n} != draft block_size {bs}{hint}; SGLang only warns and runs the draft "
        "at a block length it was not trained for",
        [ctx.dloc("block_size")],
    )


RULE = Rule(
    code="DF401",
    name="sglang-num-draft-tokens-mismatch",
    severity="warning",
    backends=("sglang",),
    check=check,
    what="If given, `--speculative-num-draft-tokens` equals the draft's `block_size`.",
    why="In SGLang's DFLASH mode this flag is the block length INCLUDING the anchor token (unlike vLLM's "
    "num_speculative_tokens, which is block_size - 1); a mismatch is only logged as a warning.",
    example="draft {\"block_size\": 16} with --speculative-num-draft-tokens 15",
    fix="Pass --speculative-num-draft-tokens equal to block_size, or omit it.",
)
