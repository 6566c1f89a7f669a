"""DF106: the target layer ids are not in increasing order."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules._sources import MLX_HOOK, REF_FEATURES, VLLM_AUX_SORTED


def check(ctx: RuleContext):
    ids = ctx.draft.target_layer_ids
    if not isinstance(ids, list) or not all(is_int(i) for i in ids):
        return
    if any(b < a for a, b in zip(ids, ids[1:])):
        yield Violation(
            f"target layer ids {quote(ids)} are not increasing: vLLM and SGLang (its multimodal Qwen3.5 classes mark "
            f"the layers and collect them during the forward pass) take the features in layer order, "
            f"{quote(sorted(ids))}, the dflash reference and MLX in the listed order",
            [ctx.dloc("target_layer_ids")],
        )


RULE = Rule(
    code="DF106",
    name="layer-ids-not-increasing",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The target layer ids are listed in increasing order.",
    why="The dflash reference and the MLX port concatenate the features in the listed order, but vLLM stores the "
    "ids sorted and collects the states during the forward pass, in layer order, and so does SGLang for the "
    "multimodal Qwen3.5 classes (each listed layer is marked, and the forward loop appends the marked layers' "
    "outputs as it reaches them; SGLang's text-only Qwen3.5 classes refuse such a list: DF406). An unsorted list "
    "then feeds the engine's `fc` permuted features and acceptance collapses without an error.",
    example='draft {"dflash_config": {"target_layer_ids": [33, 1, 9, 17, 25]}}',
    fix="If the draft really was trained in this order, keep it only for runtimes that honour the list order; "
    "otherwise sort the ids (and check the training config).",
    sources=(
        VLLM_AUX_SORTED, REF_FEATURES, MLX_HOOK,
        EngineSource("sglang", "sglang/srt/models/qwen3_5.py", "1889-1892", "Qwen3.5: listed layers marked"),
        EngineSource("sglang", "sglang/srt/models/qwen3_5.py", "1942-1953", "marked layers collected in layer order"),
    ),
)
