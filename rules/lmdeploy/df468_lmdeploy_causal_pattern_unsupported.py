"""DF468: a `causal` override lmdeploy refuses (not a boolean, or an attention pattern it does not run)."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import (
    FROM_CONFIG,
    is_lmdeploy_draft,
    key_of,
    layer_types,
    nested,
    sliding_window,
)


def check(ctx: RuleContext):
    override = nested(ctx).get("causal", ctx.draft.raw.get("causal"))
    types = layer_types(ctx)
    if not is_lmdeploy_draft(ctx) or override is None or not isinstance(types, (list, tuple)):
        return
    where = [ctx.dloc("is_causal", key_of(ctx, "causal"))]
    if not isinstance(override, bool):
        yield Violation(f"causal {override!r} is not a boolean: lmdeploy {ctx.version('lmdeploy')} stops at "
                        "start-up (ValueError)", locations=where)
        return
    window = sliding_window(ctx)
    allowed = {(window, True), (None, False)}
    for i, t in enumerate(types):
        pattern = (window if t == "sliding_attention" else None, override)
        if pattern not in allowed:
            kind = "causal full attention" if not pattern[0] else "non-causal sliding attention"
            yield Violation(f"causal {override} makes layer {i} ({t}) {kind}: lmdeploy {ctx.version('lmdeploy')} "
                            "stops at start-up (ValueError \"supports only the model-default causal attention "
                            "pattern and non-causal full attention\")", locations=where)
            return


RULE = Rule(
    code="DF468",
    name="lmdeploy-causal-pattern-unsupported",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="A `causal` override (dflash_config or top level), when given, is a boolean that keeps full layers "
    "non-causal and sliding layers causal.",
    why="lmdeploy runs two attention patterns only: causal sliding-window layers and non-causal full layers.",
    example='"dflash_config": {"causal": true} with full_attention layers and a sliding window',
    fix="Drop the causal override, or describe the pattern in layer_types.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "111-124", "causal override: boolean, allowed patterns"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
