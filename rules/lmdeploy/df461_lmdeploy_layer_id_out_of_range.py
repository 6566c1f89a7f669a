"""DF461: a target layer id lmdeploy uses is outside [0, num_target_layers)."""

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
    ids, n = nested_layer_ids(ctx), ctx.draft.raw.get("num_target_layers")
    if not is_lmdeploy_draft(ctx) or not ids_are_integers(ids) or not isinstance(n, int):
        return
    bad = [i for i in ids if i < 0 or i >= n]
    if bad:
        yield Violation(f"target_layer_ids {quote(bad)} outside [0, {n}) (num_target_layers {n}): lmdeploy "
                        f"{ctx.version('lmdeploy')} stops at start-up (ValueError \"out-of-range value\")",
                        locations=[ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")])


RULE = Rule(
    code="DF461",
    name="lmdeploy-layer-id-out-of-range",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="Every dflash_config.target_layer_ids entry is in [0, num_target_layers).",
    why="lmdeploy checks each id against the draft's num_target_layers (which must equal the target's depth).",
    example='"target_layer_ids": [1, 36] with num_target_layers 36',
    fix="Use ids of the target's layers (0 .. N-1) as the draft was trained.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "156-159", "id < 0 or >= num_target_layers: ValueError"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
