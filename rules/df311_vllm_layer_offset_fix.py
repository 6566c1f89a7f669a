"""DF311: vLLM builds from before the layer-offset fix read every DFlash layer id off by one."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    d = ctx.draft
    ids = d.target_layer_ids
    if d.format == "speculators" or not isinstance(ids, list):
        return
    early = [i - 1 for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    yield Violation(
        f"vLLM builds from before mid-May 2026 capture the outputs of layers {quote(early)} instead of "
        f"target_layer_ids {quote(ids)}, with no error",
        [ctx.dloc("target_layer_ids")],
    )


RULE = Rule(
    code="DF311",
    name="vllm-layer-offset-fix",
    severity="info",
    backends=("vllm",),
    check=check,
    what="Reminds that the DFlash layer ids are read correctly only by vLLM builds with the +1 layer-offset fix "
    "(mid-May 2026).",
    why="Earlier builds passed `target_layer_ids` to the EAGLE-3 capture hook unshifted, so each feature was the "
    "output of the layer before the intended one; drafts still run, with lower acceptance.",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}} on a vLLM build from April 2026',
    fix="Use a vLLM release from after mid-May 2026.",
)
