"""DF467: `use_swa` without sliding layers; lmdeploy refuses it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft, key_of, layer_types, nested


def check(ctx: RuleContext):
    cfg = nested(ctx)
    use = cfg.get("use_swa", ctx.draft.raw.get("use_swa", False))
    types = layer_types(ctx)
    if not is_lmdeploy_draft(ctx) or not use or (isinstance(types, (list, tuple)) and "sliding_attention" in types):
        return
    yield Violation(f"use_swa is set but no draft layer is sliding_attention: lmdeploy {ctx.version('lmdeploy')} "
                    "stops at start-up (ValueError \"does not support use_swa forcing non-causal sliding "
                    "attention\")", locations=[ctx.dloc("layer_types", key_of(ctx, "use_swa"))])


RULE = Rule(
    code="DF467",
    name="lmdeploy-use-swa-refused",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="`use_swa` (in dflash_config or at the top level) is not set unless layer_types has sliding layers.",
    why="lmdeploy takes the attention pattern from layer_types only; a use_swa switch that forces sliding attention "
    "on full layers is refused.",
    example='"dflash_config": {"use_swa": true}, all layers full_attention',
    fix="Describe the sliding layers in layer_types (with use_sliding_window and sliding_window) and drop use_swa.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "106-109", "use_swa without sliding layers: ValueError"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
