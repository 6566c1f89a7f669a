"""DF462: no dflash_config.target_layer_ids, and lmdeploy's fallback formula cannot place the draft's layers."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, formula_ids, is_lmdeploy_draft, nested_layer_ids


def check(ctx: RuleContext):
    n, d = ctx.draft.raw.get("num_target_layers"), ctx.draft.num_hidden_layers
    if not is_lmdeploy_draft(ctx) or nested_layer_ids(ctx) is not None or not isinstance(n, int) or not d:
        return
    try:
        formula_ids(n, d)
    except ValueError as e:
        yield Violation(f"no dflash_config.target_layer_ids, and lmdeploy {ctx.version('lmdeploy')}'s fallback "
                        f"fails for {d} draft layers over {n} target layers ({e}): ValueError at start-up",
                        locations=[ctx.dloc("target_layer_ids", "dflash_config")])


RULE = Rule(
    code="DF462",
    name="lmdeploy-layer-ids-fallback-fails",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="When dflash_config.target_layer_ids is absent, lmdeploy's fallback (one draft layer: N // 2; else evenly "
    "from 1 to N - 3) can place the draft's layers.",
    why="The fallback needs at least 4 target layers for a draft of 2 or more layers, and positive depths.",
    example="a 2-layer draft, num_target_layers 3, no target_layer_ids",
    fix="Write the target layer ids the draft was trained with into dflash_config.target_layer_ids.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "35-55", "build_target_layer_ids: the fallback and its refusals"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "153-155", "the fallback runs when dflash_config has no target_layer_ids"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
