"""DF806: llama.cpp reads no block size from the draft and falls back to 16."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules.llamacpp._helpers import CONVERT, cite, draft_is_gguf, facts, gguf_loc, src


def check(ctx: RuleContext):
    default = facts(ctx)["block_size_default"]
    d = ctx.draft
    if draft_is_gguf(ctx):
        if d.gguf.get("dflash.block_size") is not None:
            return
        yield Violation(
            f"the draft GGUF has no dflash.block_size: llama.cpp uses {default} "
            f"({cite(ctx, 'block_size_default')}) and clamps --spec-draft-n-max to {default - 1}",
            [gguf_loc(ctx, "draft", "dflash.block_size")],
        )
        return
    if d.block_size is None:
        yield Violation(
            f"the draft config gives no block size: {CONVERT} writes dflash.block_size = {default} "
            f"({cite(ctx, 'converter_block_size')})",
            [ctx.dloc("block_size", "dflash_config.block_size")],
        )


RULE = Rule(
    code="DF806",
    name="llamacpp-block-size-default",
    severity="info",
    backends=("llama.cpp",),
    check=check,
    what="The draft says its block size: `dflash.block_size` in a GGUF, dflash_config.block_size or block_size in "
    "a checkpoint (what the converter writes).",
    why="llama.cpp does not size the draft's block from it (the block is the anchor plus --spec-draft-n-max mask "
    "tokens) but clamps --spec-draft-n-max to block_size - 1. Without the key it assumes 16, so a draft trained "
    "with smaller blocks can be asked for more tokens than it was trained to propose.",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}} (no block_size anywhere)',
    fix="Write the trained block size into the draft config (dflash_config.block_size) before converting, or set "
    "--spec-draft-n-max to at most block_size - 1 yourself.",
    sources=(src("block_size_default"), src("block_size_clamp"), src("converter_block_size")),
)
