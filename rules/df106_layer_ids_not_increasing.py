"""DF106: the target layer ids are not in increasing order."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote

from ._common import is_int
from ._sources import MLX_HOOK, REF_FEATURES, VLLM_AUX_SORTED


def check(ctx: CheckContext):
    ids = ctx.draft.target_layer_ids
    if not isinstance(ids, list) or not all(is_int(i) for i in ids):
        return
    if any(b < a for a, b in zip(ids, ids[1:])):
        yield Violation(
            f"target layer ids {quote(ids)} are not increasing: vLLM collects features in layer order, "
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
    "ids sorted and collects the states during the forward pass, in layer order; an unsorted list then feeds vLLM's "
    "`fc` permuted features and acceptance collapses without an error.",
    example='draft {"dflash_config": {"target_layer_ids": [33, 1, 9, 17, 25]}}',
    fix="If the draft really was trained in this order, keep it only for runtimes that honour the list order; "
    "otherwise sort the ids (and check the training config).",
    sources=(VLLM_AUX_SORTED, REF_FEATURES, MLX_HOOK),
)
