"""DF463: the draft's layer ids are at the top level only; lmdeploy ignores them and guesses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules.lmdeploy._lmdeploy import (
    FROM_CONFIG,
    formula_ids,
    ids_are_integers,
    is_lmdeploy_draft,
    nested_layer_ids,
)


def check(ctx: RuleContext):
    top = ctx.draft.raw.get("target_layer_ids")
    n, d = ctx.draft.raw.get("num_target_layers"), ctx.draft.num_hidden_layers
    if not is_lmdeploy_draft(ctx) or nested_layer_ids(ctx) is not None or not ids_are_integers(top):
        return
    if not isinstance(n, int) or not d:
        return
    try:
        guess = formula_ids(n, d)
    except ValueError:
        return  # DF462
    if list(top) == guess:
        return
    yield Violation(f"target_layer_ids {quote(list(top))} are at the top level only: lmdeploy "
                    f"{ctx.version('lmdeploy')} reads dflash_config.target_layer_ids, finds none and uses {quote(guess)}; "
                    "the draft gets other layers than it was trained on (no error, low acceptance)",
                    locations=[ctx.dloc("target_layer_ids", "target_layer_ids")],
                    fix=f'Add "target_layer_ids": {quote(list(top))} inside "dflash_config".')


RULE = Rule(
    code="DF463",
    name="lmdeploy-top-level-layer-ids-ignored",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="A draft that names its target layer ids at the top level also names them in dflash_config (or they equal "
    "lmdeploy's fallback).",
    why="lmdeploy reads the ids only from dflash_config; without them it builds evenly spaced ids, so a draft "
    "trained on other layers runs with the wrong features and silently low acceptance.",
    example='{"target_layer_ids": [2, 18, 33], "dflash_config": {"block_size": 16, "mask_token_id": 151669}}',
    fix="Copy target_layer_ids into dflash_config.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "153-155", "ids from dflash_config only, else the fallback"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
