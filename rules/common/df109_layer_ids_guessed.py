"""DF109: the layer ids are not in the checkpoint; each engine guesses them its own way."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import (
    REF_DRAFT_INIT,
    REF_IDS_FORMULA,
    SGL_IDS,
    SGL_IDS_FORMULA,
    SGL_TARGET_DEPTH,
    SPECULATORS_IDS,
    VLLM_AUX_DEFAULT,
    VLLM_AUX_FROM_CONFIG_V1,
    VLLM_FC_CHECK,
    VLLM_FC_WIDTH,
)
from dflash_compat.specs.draft import build_target_layer_ids


def _vllm(ctx: RuleContext):
    d, n = ctx.draft, ctx.target.num_hidden_layers
    layers = f"layers {[1, n // 2 - 1, n - 4]}" if n and n >= 4 else "3 layers"
    if d.num_hidden_layers == 3:
        return (f"vLLM ignores num_target_layers and captures the target's EAGLE-3 default {layers} (in these ids' "
                "numbering): fc's width matches the 3-layer draft, so it silently reads layers it may not have been "
                "trained on"), "warning"
    return (f"vLLM ignores num_target_layers and captures the target's EAGLE-3 default {layers}, while fc expects "
            f"{d.num_hidden_layers} features (one per draft layer): the first step fails with a feature-width "
            "ValueError"), "error"


def check(ctx: RuleContext):
    d, t = ctx.draft, ctx.target
    if not d.target_layer_ids_guessed:
        return
    locs = [ctx.dloc("num_target_layers"), ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")]
    if d.is_speculators:
        yield Violation("draft config gives no `aux_hidden_state_layer_ids`: vLLM's speculators reader indexes it "
                        "and fails with KeyError", locs, backends=("vllm",), severity="error")
        return
    yield Violation(
        f"draft config gives no target layer ids; the dflash reference derives {quote(d.target_layer_ids)} from "
        f"num_target_layers {d.num_target_layers} and {d.num_hidden_layers} draft layers, which may not be the "
        "ids it was trained with",
        locs, backends=("dflash",),
    )
    message, severity = _vllm(ctx)
    yield Violation(f"draft config gives no target layer ids: {message}", locs, backends=("vllm",),
                    severity=severity)
    n = t.num_hidden_layers
    if n and n != d.num_target_layers and n >= 4:
        guess = f"{build_target_layer_ids(n, d.num_hidden_layers)} from the running target's {n} layers, not " \
                f"{d.target_layer_ids} from num_target_layers {d.num_target_layers}"
    else:
        guess = f"{d.target_layer_ids} from the running target's depth"
    yield Violation(f"draft config gives no target layer ids: SGLang derives {guess}, silently",
                    locs, backends=("sglang",))


RULE = Rule(
    code="DF109",
    name="layer-ids-guessed",
    severity="warning",
    backends=("dflash", "vllm", "sglang"),
    check=check,
    what="The draft config states its `dflash_config.target_layer_ids` instead of leaving them to be derived "
    "from `num_target_layers`. (MLX requires the ids: DF501.)",
    why="Each engine fills the gap differently. The dflash reference applies a formula to num_target_layers (middle "
    "layer, or evenly spaced from 1 to N-3), but 14 of 20 published checkpoints do not follow it, and wrong ids give "
    "acceptance near 1 with no error. SGLang applies the same formula to the depth of the target it is serving, "
    "whatever num_target_layers says. vLLM ignores num_target_layers and captures its EAGLE-3 default layers "
    "(2, N//2, N-3 in its own numbering), then fails because fc was sized for one feature per draft layer (a "
    "3-layer draft runs, on other layers). MLX fails with KeyError (DF501).",
    example='draft {"num_target_layers": 36, "num_hidden_layers": 5, "dflash_config": {"mask_token_id": 151669}}',
    fix="Add `dflash_config.target_layer_ids` from the draft's training config or model card.",
    sources=(REF_IDS_FORMULA, REF_DRAFT_INIT, SGL_IDS_FORMULA, SGL_IDS, SGL_TARGET_DEPTH, VLLM_AUX_FROM_CONFIG_V1,
             VLLM_AUX_DEFAULT, VLLM_FC_WIDTH, VLLM_FC_CHECK, SPECULATORS_IDS),
)
