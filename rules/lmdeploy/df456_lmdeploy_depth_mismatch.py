"""DF456: the draft's `num_target_layers` is not the target's depth; lmdeploy refuses the pair."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft


def check(ctx: RuleContext):
    declared, n = ctx.draft.raw.get("num_target_layers"), ctx.target.num_hidden_layers
    if not is_lmdeploy_draft(ctx) or declared is None or n is None or declared == n:
        return
    yield Violation(
        f"num_target_layers {declared} != the target's num_hidden_layers {n}: lmdeploy {ctx.version('lmdeploy')} "
        "stops at start-up (ValueError \"DFlash draft/target depth mismatch\")",
        locations=[ctx.dloc("num_target_layers", "num_target_layers"), ctx.tloc("num_hidden_layers")],
    )


RULE = Rule(
    code="DF456",
    name="lmdeploy-depth-mismatch",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft's `num_target_layers` equals the target's `num_hidden_layers`.",
    why="lmdeploy compares the two and refuses a mismatch (vLLM and SGLang only use the value to guess layer ids). "
    "A mismatch usually means the draft was trained for another target.",
    example="num_target_layers 36 with a 28-layer target",
    fix="Pair the draft with the target it was trained for; if the depth is right and the key is a typo, fix it.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "137-140", "depth mismatch: ValueError"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "133-134", "draft num_hidden_layers / num_target_layers read"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
