"""DF105: the target layer id list is empty or names a layer twice."""

from __future__ import annotations

from collections import Counter

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules._sources import REF_FEATURES, SGL_IDS, VLLM_AUX_SORTED, VLLM_FC_CHECK

SGL_IDS_NONEMPTY = EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "657-675",
                                "dflash_config.target_layer_ids must be non-empty")


def check(ctx: RuleContext):
    ids = ctx.draft.target_layer_ids
    if not isinstance(ids, list):
        return
    loc = [ctx.dloc("target_layer_ids")]
    if not ids:
        yield Violation("target layer id list is empty: the draft would get no context features", loc)
        return
    dups = sorted(i for i, c in Counter(repr(i) for i in ids).items() if c > 1)
    if dups:
        yield Violation(f"target layer ids {quote(ids)} repeat {quote_items(dups, raw=True)}", loc)


RULE = Rule(
    code="DF105",
    name="layer-ids-duplicated-or-empty",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The target layer id list is non-empty and every id appears once.",
    why="vLLM keeps each layer once (it stores the ids as a set) and then fails because fc expects `len(ids) * "
    "hidden` inputs, while the dflash reference and MLX concatenate the repeat; an empty list gives the draft no "
    "context at all (SGLang refuses it).",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 9, 25]}}',
    fix="Restore the ids the draft was trained with (its training config or model card).",
    sources=(VLLM_AUX_SORTED, VLLM_FC_CHECK, REF_FEATURES, SGL_IDS, SGL_IDS_NONEMPTY),
)
