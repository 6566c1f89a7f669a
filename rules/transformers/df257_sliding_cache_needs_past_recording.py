"""DF257: the target's cache has sliding-window layers that crop only with past recording on."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_SLIDING_CROP, HF_SLIDING_CROP_RAISES, REF_CACHE


def check(ctx: RuleContext):
    t, m = ctx.target, ctx.tree
    cache, layers = m.cache, m.paths.layers if m.paths else None
    sliding = list(cache.sliding) if cache else []
    if not sliding:
        return
    window = cache.sliding_window
    win = f" of {window} tokens" if window else ""
    loc = [ctx.module_loc(f"{layers}.{sliding[0]}" if layers else "cache")]
    if cache.past_recording is False:
        yield Violation(
            f"{len(sliding)} cache layers slide over a window{win} and this transformers' DynamicCache has no "
            "activate_past_recording(): rejected tokens cannot be cropped once the window is full",
            loc, severity="error",
        )
    elif not t.uses_sliding_window:  # DF202 reports sliding windows the config shows
        yield Violation(
            f"{len(sliding)} cache layers slide over a window{win} (a default of {m.model_class}): crop "
            "raises past the window unless the runtime calls cache.activate_past_recording() before prefill",
            loc,
        )


RULE = Rule(
    code="DF257",
    name="sliding-cache-needs-past-recording",
    severity="warning",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="Sliding-window layers of the cache the target builds (DynamicSlidingWindowLayer) can be cropped: the "
    "installed transformers offers activate_past_recording(). Complements DF202 for windows set by model defaults.",
    why="A sliding layer keeps only the window; cropping after it has filled raises unless past states were "
    "recorded. Without that API (older transformers) speculative decoding breaks after `window` tokens.",
    example="a Mistral-style target whose config class defaults sliding_window=4096",
    fix="Call `cache.activate_past_recording()` right after creating the cache (the dflash 0.1 reference does); "
    "upgrade transformers if it lacks the method.",
    sources=(REF_CACHE, HF_SLIDING_CROP, HF_SLIDING_CROP_RAISES)
)
