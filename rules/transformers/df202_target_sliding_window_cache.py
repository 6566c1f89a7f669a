"""DF202: the target has sliding-window layers, whose cache transformers will not crop past the window."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_SLIDING_CROP, HF_SLIDING_CROP_RAISES, REF_CACHE


def check(ctx: RuleContext):
    t = ctx.target
    if not t.uses_sliding_window:
        return
    yield Violation(
        f"target attends over a sliding window of {t.sliding_window} tokens: DynamicCache(config=...) refuses "
        "to crop its sliding layers once that many tokens are cached, unless past-state recording is on",
        [ctx.tloc("sliding_window")],
    )


RULE = Rule(
    code="DF202",
    name="target-sliding-window-cache",
    severity="warning",
    backends=("dflash",),
    check=check,
    what="Notes a target with sliding-window attention layers (`layer_types` with `sliding_attention`, or a "
    "`sliding_window` that is in use).",
    why="transformers' DynamicCache(config=...) keeps only the window for those layers and raises when asked to crop "
    "after the window has filled; rolling back rejected draft tokens past that point needs "
    "`cache.activate_past_recording()` (recent transformers) or fails.",
    example='target {"model_type": "gpt_oss", "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"]}',
    fix="Use a transformers version with `DynamicCache.activate_past_recording` and a runtime that calls it "
    "(the `dflash` package 0.1.0 does); keep prompts shorter than the window otherwise.",
    sources=(REF_CACHE, HF_SLIDING_CROP, HF_SLIDING_CROP_RAISES)
)
