"""DF815: --spec-draft-n-max above what the draft's block allows; llama.cpp clamps it."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules.llamacpp._helpers import cite, draft_is_gguf, facts, src


def check(ctx: RuleContext):
    n = ctx.options.llamacpp_draft_n_max
    if n is None:
        return
    d = ctx.draft
    block = d.gguf.get("dflash.block_size") if draft_is_gguf(ctx) else d.block_size
    block = block if isinstance(block, int) and not isinstance(block, bool) else facts(ctx)["block_size_default"]
    if n <= block - 1:
        return
    yield Violation(
        f"--spec-draft-n-max {n} exceeds the draft's block_size {block} - 1: llama.cpp warns and drafts {block - 1} "
        f"tokens per step ({cite(ctx, 'block_size_clamp')})",
        [ctx.dloc("block_size", "dflash.block_size" if draft_is_gguf(ctx) else None)],
    )


RULE = Rule(
    code="DF815",
    name="llamacpp-draft-n-max-clamped",
    severity="info",
    backends=("llama.cpp",),
    check=check,
    reads=("n_max",),
    what="The llama.cpp draft length you launch with (`--spec-draft-n-max`) is at most the draft's block_size - 1.",
    why="A DFlash draft proposes at most block_size - 1 tokens (the anchor plus masks fill one trained block). "
    "llama.cpp clamps a larger --spec-draft-n-max with a warning, so the flag does not do what it says; its default "
    "(3) drafts far fewer tokens than most DFlash drafts can.",
    example="--spec-draft-n-max 16 with a block_size 16 draft (15 at most)",
    fix="Launch with --spec-draft-n-max block_size - 1, or the best K `dflash-check recommend` reports.",
    sources=(src("block_size_clamp"), src("flag_n_max"), src("flag_n_max_default")),
)
