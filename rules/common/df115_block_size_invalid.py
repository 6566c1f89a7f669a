"""DF115: the draft's block size is unusable, unusually large, or not stated."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.contract import DEFAULT_BLOCK_SIZE
from dflash_compat.rules._sources import MLX_LOAD_DRAFT, REF_DRAFT_INIT, SGL_BLOCK

SGL_BLOCK_DEFAULT = EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "509",
                                 "block size from the draft config, default 16")

DEFAULT = DEFAULT_BLOCK_SIZE
LARGEST_SEEN = 64


def _context(ctx: RuleContext):
    """(max_position_embeddings, whose) of the target, else of the draft; None when neither says."""
    for who, spec in (("target", ctx.target), ("draft", ctx.draft)):
        limit = getattr(spec, "max_position_embeddings", None)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            return limit, who
    return None


def check(ctx: RuleContext):
    bs = ctx.draft.block_size
    if bs is None:
        key = "block_size" if ctx.draft.is_speculators else "dflash_config.block_size"
        yield Violation(
            f"draft config gives no block_size: the dflash reference, SGLang and MLX assume {DEFAULT} (vLLM drafts "
            "num_speculative_tokens)",
            [ctx.dloc("block_size", key)],
            severity="info",
        )
    elif bs < 2:
        yield Violation(
            f"block_size {bs} is below 2: a block is the anchor plus at least one drafted token",
            [ctx.dloc("block_size")],
        )
    elif (context := _context(ctx)) is not None and bs > context[0]:
        limit, who = context
        yield Violation(
            f"block_size {bs} is larger than the {who}'s context (max_position_embeddings {limit}): no block "
            "fits, and engines size their buffers by it; the config is corrupt or mistyped",
            [ctx.dloc("block_size")],
        )
    elif bs > LARGEST_SEEN:
        yield Violation(
            f"block_size {bs} is above {LARGEST_SEEN}: published drafts use 8-16; check it is not a typo",
            [ctx.dloc("block_size")],
            severity="warning",
        )


RULE = Rule(
    code="DF115",
    name="block-size-invalid",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="`block_size` (top level or `dflash_config.block_size`) is at least 2 and no larger than the target's "
    "context (`max_position_embeddings`); above 64 is a warning, absence an info (the default 16 applies).",
    why="The block is the last committed token followed by `block_size - 1` masks; with fewer than 2 nothing is "
    "drafted, and the draft only predicts well at the length it was trained with.",
    example='draft {"block_size": 1}',
    fix="Set the block size the draft was trained with (its model card; `b16` in a repo name means 16).",
    sources=(REF_DRAFT_INIT, MLX_LOAD_DRAFT, SGL_BLOCK, SGL_BLOCK_DEFAULT),
)
