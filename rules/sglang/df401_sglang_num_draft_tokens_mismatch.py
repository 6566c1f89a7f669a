"""DF401: SGLang's --speculative-num-draft-tokens differs from the draft's block size."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    o, bs = ctx.options, ctx.draft.block_size
    # --speculative-dflash-block-size stands in for num-draft-tokens when that is not given (DF412: both differ).
    n, flag = o.sglang_num_draft_tokens, "--speculative-num-draft-tokens"
    if n is None:
        n, flag = o.sglang_dflash_block_size, "--speculative-dflash-block-size"
    if n is None or bs is None or n == bs:
        return
    hint = " (it counts the anchor: block_size, not block_size - 1)" if n == bs - 1 else ""
    yield Violation(
        f"{flag} {n} != draft block_size {bs}{hint}: SGLang only logs \"DFLASH block size mismatch\" and runs the "
        "draft at a block length it was not trained for",
        [ctx.dloc("block_size")],
    )


RULE = Rule(
    code="DF401",
    name="sglang-num-draft-tokens-mismatch",
    severity="warning",
    backends=("sglang",),
    check=check,
    reads=("num_draft_tokens", "dflash_block_size"),
    what="If given, `--speculative-num-draft-tokens` (or `--speculative-dflash-block-size`) equals the draft's "
    "`block_size`.",
    why="In SGLang's DFLASH mode this flag is the block length INCLUDING the anchor token (unlike vLLM's "
    "num_speculative_tokens, which is block_size - 1). When omitted SGLang reads it from the draft; when it "
    "differs SGLang only logs a warning and builds every block (and a DFlash 2 draft's convolutions) at the "
    "flag's length.",
    example="draft {\"block_size\": 16} with --speculative-num-draft-tokens 15",
    fix="Pass --speculative-num-draft-tokens equal to block_size, or omit it.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "389-425", "omitted: read from the draft"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "507-524", "mismatch: warning only"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "806-817", "DFlash 2 convolutions take the flag length"),
    ),
)
