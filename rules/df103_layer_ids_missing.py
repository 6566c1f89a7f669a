"""DF103: the draft says neither which target layers it reads nor how deep its target was."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation


def check(ctx: CheckContext):
    d = ctx.draft
    if d.target_layer_ids is not None:
        return
    key = "aux_hidden_state_layer_ids" if d.is_speculators else "dflash_config.target_layer_ids"
    yield Violation(
        f"draft config has neither `{key}` nor `num_target_layers`: nothing says which target layers feed the draft",
        [ctx.dloc("target_layer_ids", key), ctx.dloc("num_target_layers", "num_target_layers")],
    )


RULE = Rule(
    code="DF103",
    name="layer-ids-missing",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft config gives `dflash_config.target_layer_ids` (speculators: `aux_hidden_state_layer_ids`), "
    "or at least `num_target_layers` to derive them from.",
    why="The draft was trained on the hidden states of particular target layers; without ids the loaders fail "
    "(vLLM, SGLang and MLX read them as required keys) and the reference runtime has nothing to guess from.",
    example='draft {"architectures": ["DFlashDraftModel"], "dflash_config": {"mask_token_id": 151669}}',
    fix="Restore `dflash_config.target_layer_ids` from the draft's training config; do not invent ids.",
)
