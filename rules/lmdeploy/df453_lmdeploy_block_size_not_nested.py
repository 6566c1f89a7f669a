"""DF453: lmdeploy reads `block_size` only inside `dflash_config` (the z-lab layout keeps it at the top level)."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, dflash_config, is_lmdeploy_draft


def check(ctx: RuleContext):
    cfg = dflash_config(ctx)
    if not is_lmdeploy_draft(ctx) or not isinstance(cfg, dict) or "block_size" in cfg:
        return
    top = ctx.draft.raw.get("block_size")
    have = f"the draft has block_size {top} at the top level only" if top is not None else "the draft has none"
    value = top if isinstance(top, int) and not isinstance(top, bool) else "B"
    yield Violation(
        f"lmdeploy {ctx.version('lmdeploy')} reads dflash_config['block_size'] and {have}: KeyError 'block_size' "
        "at start-up",
        locations=[ctx.dloc("block_size", "block_size" if top is not None else "dflash_config")],
        fix=f'Copy it into the draft\'s config.json: "dflash_config": {{..., "block_size": {value}}} (keep the '
        "top-level key for the engines that read it there).",
    )


RULE = Rule(
    code="DF453",
    name="lmdeploy-block-size-not-nested",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="`dflash_config.block_size` is present.",
    why="lmdeploy indexes dflash_config['block_size'] without a fallback to the top level, so the layout z-lab "
    "publishes (block_size at the top level, mask_token_id and target_layer_ids nested) fails with a KeyError. "
    "lmdeploy PR #4991 reports drafts that keep block_size at the top level.",
    example='{"block_size": 16, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix='Add "block_size" inside "dflash_config" with the same value as the top-level key.',
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "142", "max_query_length = dflash_config['block_size']"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
