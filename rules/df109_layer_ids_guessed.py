"""DF109: the layer ids are not in the checkpoint; they are guessed from a formula."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    d = ctx.draft
    if not d.target_layer_ids_guessed:
        return
    yield Violation(
        f"draft config gives no target layer ids; the reference formula for num_target_layers "
        f"{d.num_target_layers} and {d.num_hidden_layers} draft layers gives {quote(d.target_layer_ids)}, "
        "which may not be the ids it was trained with",
        [ctx.dloc("num_target_layers"), ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")],
    )


RULE = Rule(
    code="DF109",
    name="layer-ids-guessed",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft config states its `dflash_config.target_layer_ids` instead of leaving them to be derived "
    "from `num_target_layers`.",
    why="The reference runtime falls back to a formula (middle layer, or evenly spaced from 1 to N-3), but 14 of 20 "
    "published checkpoints do not follow it; wrong ids give acceptance near 1 with no error. vLLM, SGLang and "
    "MLX read the ids as required keys and do not guess.",
    example='draft {"num_target_layers": 36, "num_hidden_layers": 5, "dflash_config": {"mask_token_id": 151669}}',
    fix="Add `dflash_config.target_layer_ids` from the draft's training config or model card.",
)
