"""DF116: the draft config sets two different block sizes."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule

from ._common import disagreeing_locations


def check(ctx: CheckContext):
    return disagreeing_locations(ctx, 'block_size', ctx.draft.block_size_locations, 'dflash_config.block_size', 'block sizes', 'readers that prefer dflash_config')


RULE = Rule(
    code="DF116",
    name="block-size-locations-disagree",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="When both `dflash_config.block_size` and a top-level `block_size` are present, they agree.",
    why="Both forms exist in the wild and readers differ in which one they take, so two values mean the draft "
    "runs at a block length it was not trained for on some engines.",
    example='draft {"block_size": 16, "dflash_config": {"block_size": 8}}',
    fix="Keep the block size the draft was trained with in both places, or drop one of them.",
)
