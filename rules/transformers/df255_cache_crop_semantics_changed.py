"""DF255: this transformers' DynamicCache.crop takes a negative token count; 4.x took the length to keep."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_CROP, REF_CACHE


def check(ctx: RuleContext):
    m = ctx.tree
    if m.crop_semantics == "negative-count":
        yield Violation(
            f"transformers {m.transformers_version}: DynamicCache.crop(-n) removes n tokens and a positive "
            "argument raises; code written for 4.x (`cache.crop(new_length)`) fails",
            [ctx.module_loc("cache")],
        )


RULE = Rule(
    code="DF255",
    name="cache-crop-semantics-changed",
    severity="info",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="Notes how the installed transformers' DynamicCache.crop reads its argument, found by cropping a "
    "3-token cache: 4.x keeps `max_length` tokens, 5.x removes `-n` tokens and rejects positive values.",
    why="Rolling back rejected draft tokens is one crop per step; a runtime written for the other convention "
    "raises `Calling crop with a positive value is not supported` or crops the wrong amount.",
    example="cache.crop(start) in a 4.x-era loop on transformers 5.x",
    fix="Crop with `cache.crop(-(cache.get_seq_length() - length))` on 5.x (the dflash 0.1 reference does), "
    "`cache.crop(length)` on 4.x.",
    sources=(REF_CACHE, HF_CROP)
)
