"""DF454: lmdeploy reads `mask_token_id` only inside `dflash_config`."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, dflash_config, is_lmdeploy_draft


def check(ctx: RuleContext):
    cfg = dflash_config(ctx)
    if not is_lmdeploy_draft(ctx) or not isinstance(cfg, dict) or cfg.get("mask_token_id") is not None:
        return
    top = ctx.draft.raw.get("mask_token_id")
    have = f"the draft has mask_token_id {top} at the top level only" if top is not None else "the draft has none"
    yield Violation(
        f"lmdeploy {ctx.version('lmdeploy')}: {have}; ValueError \"DFlash checkpoint requires "
        "dflash_config.mask_token_id\" at start-up",
        locations=[ctx.dloc("mask_token_id", "mask_token_id" if top is not None else "dflash_config")],
        fix=(f'Add "mask_token_id": {top} inside "dflash_config".' if top is not None else
             'Add "mask_token_id" (the token the draft was trained with) inside "dflash_config".'),
    )


RULE = Rule(
    code="DF454",
    name="lmdeploy-mask-token-not-nested",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="`dflash_config.mask_token_id` is present.",
    why="lmdeploy reads the mask token from dflash_config only (vLLM and SGLang also accept the top level); lmdeploy "
    "PR #4991 reports drafts that keep it at the top level.",
    example='{"mask_token_id": 151669, "dflash_config": {"block_size": 16}}',
    fix='Put "mask_token_id" inside "dflash_config".',
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "149-151", "dflash_config.get('mask_token_id'), ValueError when None"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
