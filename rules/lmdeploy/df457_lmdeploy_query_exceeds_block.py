"""DF457: 1 + the draft tokens per step exceeds the draft's block size; lmdeploy refuses it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import (
    FROM_CONFIG,
    is_lmdeploy_draft,
    nested,
    num_speculative_tokens,
)


def check(ctx: RuleContext):
    block = nested(ctx).get("block_size")
    if not is_lmdeploy_draft(ctx) or not isinstance(block, int) or isinstance(block, bool):
        return
    o = ctx.options
    if o.lmdeploy_block_size is not None and o.lmdeploy_block_size < 2:
        return  # DF458
    k = num_speculative_tokens(ctx)
    if k + 1 <= block:
        return
    given = (f"--speculative-dflash-block-size {o.lmdeploy_block_size}" if o.lmdeploy_block_size is not None
             else f"--speculative-num-draft-tokens {k}")
    yield Violation(
        f"{given}: query length {k + 1} > dflash_config.block_size {block}; lmdeploy {ctx.version('lmdeploy')} "
        "stops at start-up (ValueError \"DFlash query length ... must not exceed\")",
        locations=[ctx.dloc("block_size", "dflash_config.block_size")],
        fix=f"Launch with --speculative-num-draft-tokens {block - 1} (or --speculative-dflash-block-size {block}).",
    )


RULE = Rule(
    code="DF457",
    name="lmdeploy-query-exceeds-block",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="1 + `--speculative-num-draft-tokens` (or `--speculative-dflash-block-size`) is at most "
    "dflash_config.block_size.",
    why="lmdeploy verifies one anchor token plus the draft tokens per step and refuses a query longer than the block "
    "the draft was trained for.",
    example="--speculative-num-draft-tokens 16 with block_size 16",
    fix="Use --speculative-num-draft-tokens block_size - 1 (z-lab's setting) or less.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "142-147", "query length 1 + K must not exceed dflash_config.block_size"),
             EngineSource("lmdeploy", "lmdeploy/messages.py", "878-886", "--speculative-dflash-block-size B means K = B - 1"),
             FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
    reads=("num_draft_tokens", "dflash_block_size"),
)
