"""DF116: the draft config sets two different block sizes."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext
from dflash_compat.rules._common import disagreeing_locations
from dflash_compat.rules._sources import HF_NATIVE_KEYS, MLX_LOAD_DRAFT, REF_DRAFT_INIT, SGL_BLOCK, SPEC_CONVERT


def check(ctx: RuleContext):
    return disagreeing_locations(
        ctx, "block_size", ctx.draft.block_size_locations, "dflash_config.block_size", "block sizes",
        "the dflash reference, SGLang and MLX", "the speculators converter and transformers' generate()",
    )


RULE = Rule(
    code="DF116",
    name="block-size-locations-disagree",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="When both `dflash_config.block_size` and a top-level `block_size` are present, they agree.",
    why="Both forms exist in the wild and readers differ: the dflash reference, SGLang and MLX prefer "
    "`dflash_config.block_size`, the speculators converter takes the top-level value first and transformers' "
    "generate(speculation_type='dflash') only the top-level one (vLLM takes the block from "
    "`num_speculative_tokens`). Two values mean the draft runs at a block length it was not trained for somewhere.",
    example='draft {"block_size": 16, "dflash_config": {"block_size": 8}}',
    fix="Keep the block size the draft was trained with in both places, or drop one of them.",
    sources=(REF_DRAFT_INIT, SGL_BLOCK, MLX_LOAD_DRAFT, SPEC_CONVERT, HF_NATIVE_KEYS),
)
