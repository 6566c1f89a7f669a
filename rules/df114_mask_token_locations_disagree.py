"""DF114: the draft config sets two different mask token ids."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule

from ._common import disagreeing_locations


def check(ctx: CheckContext):
    return disagreeing_locations(ctx, 'mask_token_id', ctx.draft.mask_token_id_locations, 'dflash_config.mask_token_id', 'mask token ids', 'loaders that read the nested key')


RULE = Rule(
    code="DF114",
    name="mask-token-locations-disagree",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="When both `dflash_config.mask_token_id` and a top-level `mask_token_id` are present, they agree.",
    why="The reference, vLLM and MLX read the nested key, other readers the top-level one; two values mean at "
    "least one engine fills the block with the wrong token and acceptance drops with no error.",
    example='draft {"mask_token_id": 151643, "dflash_config": {"mask_token_id": 151669}}',
    fix="Keep the value the draft was trained with in both places (normally the nested one).",
)
