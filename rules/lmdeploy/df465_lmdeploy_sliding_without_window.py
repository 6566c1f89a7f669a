"""DF465: sliding-attention draft layers without the window lmdeploy reads."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft, layer_types, sliding_window


def check(ctx: RuleContext):
    types = layer_types(ctx)
    if not is_lmdeploy_draft(ctx) or not isinstance(types, (list, tuple)) or "sliding_attention" not in types:
        return
    if sliding_window(ctx) is not None:
        return
    raw = ctx.draft.raw
    why = ("use_sliding_window is not true, so the config class drops sliding_window"
           if raw.get("sliding_window") not in (None, 0, -1) else "no sliding_window")
    yield Violation(f"sliding_attention layers but {why}: lmdeploy {ctx.version('lmdeploy')} stops at start-up "
                    "(ValueError \"sliding_attention layers require the model-default sliding_window\")",
                    locations=[ctx.dloc("layer_types", "layer_types")],
                    fix='Set "use_sliding_window": true and "sliding_window" to the window the draft was trained '
                    "with.")


RULE = Rule(
    code="DF465",
    name="lmdeploy-sliding-without-window",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="A draft with sliding_attention layers has use_sliding_window true and a positive sliding_window.",
    why="lmdeploy takes the window from the draft's config (Qwen3Config keeps sliding_window only when "
    "use_sliding_window is true) and refuses sliding layers without one.",
    example='"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 2048 (use_sliding_window '
    "absent)",
    fix='Set "use_sliding_window": true with the window, or make the layers full_attention if that is how it was '
    "trained.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "89-96", "window from the config; sliding layers need it"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
