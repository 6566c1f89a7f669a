"""DF452: the draft has no `dflash_config` dictionary, which lmdeploy requires."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, dflash_config, is_lmdeploy_draft


def check(ctx: RuleContext):
    if not is_lmdeploy_draft(ctx):
        return
    cfg = dflash_config(ctx)
    if isinstance(cfg, dict):
        return
    if "dflash_config" not in ctx.draft.raw:
        why = "AttributeError reading draft_hf_config.dflash_config"
    else:
        why = "ValueError \"DFlash checkpoint requires a dflash_config dictionary\""
    yield Violation(f"lmdeploy {ctx.version('lmdeploy')} stops at start-up: {why}",
                    locations=[ctx.dloc("dflash_config", "dflash_config")])


RULE = Rule(
    code="DF452",
    name="lmdeploy-dflash-config-missing",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft's config.json has a `dflash_config` object.",
    why="lmdeploy reads block_size, mask_token_id and target_layer_ids from dflash_config only, and refuses a draft "
    "without it before any weight is loaded.",
    example='a draft config with "block_size", "mask_token_id" at the top level and no "dflash_config"',
    fix='Add "dflash_config": {"block_size": B, "mask_token_id": M, "target_layer_ids": [...]} to the draft\'s '
    "config.json (values as the draft was trained).",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "133-136", "dflash_config read as an attribute, then validated"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "69-72", "a dflash_config dictionary is required"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
