"""DF103: the draft says neither which target layers it reads nor how deep its target was."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import (
    REF_DRAFT_INIT,
    SGL_IDS,
    SGL_TARGET_DEPTH,
    SPECULATORS_IDS,
    VLLM_AUX_DEFAULT,
    VLLM_AUX_FROM_CONFIG_V1,
    VLLM_FC_CHECK,
    VLLM_FC_WIDTH,
)


def check(ctx: RuleContext):
    d = ctx.draft
    if d.target_layer_ids is not None:
        return
    if d.is_speculators:
        yield Violation(
            "draft config has no `aux_hidden_state_layer_ids`: vLLM's speculators reader indexes it and fails "
            "with KeyError",
            [ctx.dloc("target_layer_ids", "aux_hidden_state_layer_ids")],
            backends=("vllm",),
        )
        return
    locs = [ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids"),
            ctx.dloc("num_target_layers", "num_target_layers")]
    head = "draft config has neither `dflash_config.target_layer_ids` nor `num_target_layers`"
    yield Violation(
        f"{head}: the dflash reference builds its default ids from config.num_target_layers and fails with "
        "AttributeError when the draft is constructed",
        locs, backends=("dflash",),
    )
    yield Violation(
        f"{head}: vLLM falls back to the target's EAGLE-3 default layers (2, N//2, N-3) and sizes fc for "
        f"{d.num_hidden_layers} features (one per draft layer), so the first step fails with a feature-width "
        "ValueError unless the draft happens to have 3 layers (then it silently reads layers it was not trained on)",
        locs, backends=("vllm",),
    )
    yield Violation(
        f"{head}: SGLang guesses them with the reference formula from the running target's depth, silently",
        locs, backends=("sglang",), severity="warning",
    )


RULE = Rule(
    code="DF103",
    name="layer-ids-missing",
    severity="error",
    backends=("dflash", "vllm", "sglang"),
    check=check,
    what="The draft config gives `dflash_config.target_layer_ids` (speculators: `aux_hidden_state_layer_ids`), "
    "or at least `num_target_layers` to derive them from. (MLX requires both keys: DF501.)",
    why="The draft was trained on the hidden states of particular target layers. Without either key the dflash "
    "reference cannot even build the draft (AttributeError on num_target_layers); vLLM captures its EAGLE-3 default "
    "layers and then fails on fc's input width (or, for a 3-layer draft, silently reads the wrong layers); SGLang "
    "guesses from the running target's depth without a word; MLX fails with KeyError (DF501).",
    example='draft {"architectures": ["DFlashDraftModel"], "dflash_config": {"mask_token_id": 151669}}',
    fix="Restore `dflash_config.target_layer_ids` (and `num_target_layers`) from the draft's training config; do "
    "not invent ids.",
    sources=(REF_DRAFT_INIT, VLLM_AUX_FROM_CONFIG_V1, VLLM_AUX_DEFAULT, VLLM_FC_WIDTH, VLLM_FC_CHECK, SGL_IDS,
             SGL_TARGET_DEPTH, SPECULATORS_IDS),
)
