"""DF309: the mask token id is only at the top level, where vLLM does not look."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation

NESTED = "dflash_config.mask_token_id"


def check(ctx: CheckContext):
    d = ctx.draft
    if d.is_speculators or d.mask_token_id is None or NESTED in d.mask_token_id_locations:
        return
    yield Violation(
        f"mask_token_id {d.mask_token_id} is only at `{d.key('mask_token_id')}`; vLLM reads `{NESTED}`",
        [ctx.dloc("mask_token_id")],
    )


RULE = Rule(
    code="DF309",
    name="vllm-mask-token-not-nested",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A z-lab draft keeps its mask token id at `dflash_config.mask_token_id`.",
    why="vLLM's DFlash loader requires the nested key and fails when it is absent, even if a top-level "
    "`mask_token_id` exists (other readers fall back to it).",
    example='draft {"mask_token_id": 151669, "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix="Copy the value into `dflash_config.mask_token_id`.",
)
