"""DF460: dflash_config.target_layer_ids repeat or go down; lmdeploy refuses them."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules.lmdeploy._lmdeploy import (
    FROM_CONFIG,
    ids_are_integers,
    is_lmdeploy_draft,
    nested_layer_ids,
)


def check(ctx: RuleContext):
    ids = nested_layer_ids(ctx)
    if not is_lmdeploy_draft(ctx) or not ids_are_integers(ids):
        return
    if all(b > a for a, b in zip(ids, ids[1:])):
        return
    yield Violation(f"dflash_config.target_layer_ids {quote(list(ids))} are not strictly increasing: lmdeploy "
                    f"{ctx.version('lmdeploy')} stops at start-up (ValueError \"must be strictly increasing and "
                    "duplicate-free\")", locations=[ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")])


RULE = Rule(
    code="DF460",
    name="lmdeploy-layer-ids-not-increasing",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="dflash_config.target_layer_ids are strictly increasing (no duplicates).",
    why="lmdeploy concatenates the captured layers in layer order and refuses ids in any other order, where vLLM "
    "sorts them silently.",
    example='"target_layer_ids": [9, 1, 17]',
    fix="Check the order the draft was trained with; a draft trained on an unsorted list does not run on lmdeploy.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "22-32", "duplicate-free, strictly increasing"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
