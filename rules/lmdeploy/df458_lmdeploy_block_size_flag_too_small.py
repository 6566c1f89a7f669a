"""DF458: `--speculative-dflash-block-size` below 2; lmdeploy refuses it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    b = ctx.options.lmdeploy_block_size
    if b is None or b >= 2:
        return
    yield Violation(f"--speculative-dflash-block-size {b}: lmdeploy {ctx.version('lmdeploy')} refuses it "
                    "(ValueError \"dflash_block_size must be an integer greater than or equal to 2\")")


RULE = Rule(
    code="DF458",
    name="lmdeploy-block-size-flag-too-small",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="`--speculative-dflash-block-size`, when given, is at least 2.",
    why="The block holds the anchor token and at least one draft token; lmdeploy's SpeculativeConfig refuses less.",
    example="--speculative-dflash-block-size 1",
    fix="Give the draft's block_size (or leave the flag out and use --speculative-num-draft-tokens).",
    sources=(EngineSource("lmdeploy", "lmdeploy/messages.py", "878-886", "dflash_block_size < 2: ValueError"),),
    reads=("dflash_block_size",),
)
