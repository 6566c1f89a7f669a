"""DF459: dflash_config.target_layer_ids is not a non-empty list of integers; lmdeploy refuses it."""

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
    if not is_lmdeploy_draft(ctx) or ids is None or ids_are_integers(ids):
        return
    what = ("not a list" if not isinstance(ids, (list, tuple)) else "empty" if not ids
            else "not all integers")
    yield Violation(f"dflash_config.target_layer_ids {quote(ids)} is {what}: lmdeploy {ctx.version('lmdeploy')} stops "
                    "at start-up (ValueError)", locations=[ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")])


RULE = Rule(
    code="DF459",
    name="lmdeploy-layer-ids-malformed",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="dflash_config.target_layer_ids, when present, is a non-empty list of integers (booleans are not).",
    why="lmdeploy parses the ids strictly before it builds the draft.",
    example='"target_layer_ids": [1, "9", 17]',
    fix="Write the target layer ids the draft was trained with as a JSON list of integers.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "7-19", "list of integers, non-empty"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
