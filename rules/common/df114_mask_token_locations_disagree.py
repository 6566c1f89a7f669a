"""DF114: the draft config sets two different mask token ids."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext
from dflash_compat.rules._common import disagreeing_locations
from dflash_compat.rules._sources import (
    HF_NATIVE_KEYS,
    MLX_LOAD_DRAFT,
    REF_DRAFT_VALUE,
    SGL_MASK_CONFIG,
    VLLM_MASK_V1,
    VLLM_MASK_V2,
)


def check(ctx: RuleContext):
    return disagreeing_locations(
        ctx, "mask_token_id", ctx.draft.mask_token_id_locations, "dflash_config.mask_token_id", "mask token ids",
        "the dflash reference, vLLM, SGLang and MLX", "transformers' generate(speculation_type='dflash')",
    )


RULE = Rule(
    code="DF114",
    name="mask-token-locations-disagree",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="When both `dflash_config.mask_token_id` and a top-level `mask_token_id` are present, they agree.",
    why="Every engine prefers the nested key (the dflash reference, vLLM and SGLang fall back to the top-level "
    "one, MLX reads only the nested one), while transformers' own generate(speculation_type='dflash') reads only "
    "the top-level attribute. Two values mean the config was edited or merged by hand: if the top-level one is "
    "the id the draft was trained with, every engine drafts with the wrong token and acceptance drops silently.",
    example='draft {"mask_token_id": 151643, "dflash_config": {"mask_token_id": 151669}}',
    fix="Keep the value the draft was trained with in both places (normally the nested one).",
    sources=(REF_DRAFT_VALUE, VLLM_MASK_V1, VLLM_MASK_V2, SGL_MASK_CONFIG, MLX_LOAD_DRAFT, HF_NATIVE_KEYS),
)
