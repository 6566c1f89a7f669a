"""DF116: the draft config sets two different block sizes."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation


def check(ctx: CheckContext):
    locs = ctx.draft.block_size_locations
    if len({repr(v) for v in locs.values()}) < 2:
        return
    listed = ", ".join(f"{k}={v!r}" for k, v in locs.items())
    yield Violation(
        f"block sizes disagree: {listed}; readers that prefer dflash_config use "
        f"{locs.get('dflash_config.block_size', '?')!r}, older ones the top-level value",
        [ctx.dloc("block_size", k) for k in locs],
    )


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
