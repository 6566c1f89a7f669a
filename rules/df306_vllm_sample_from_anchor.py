"""DF306: the draft asks to sample from the anchor position, which vLLM does not support."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation


def check(ctx: CheckContext):
    if ctx.draft.sample_from_anchor is not True:
        return
    yield Violation("draft sets sample_from_anchor = true, which vLLM rejects", [ctx.dloc("sample_from_anchor")])


RULE = Rule(
    code="DF306",
    name="vllm-sample-from-anchor",
    severity="error",
    backends=("vllm",),
    check=check,
    what="The draft config does not set `sample_from_anchor` to true.",
    why="It marks a layout variant in which the draft also predicts from the anchor position (block_size "
    "proposals per block instead of block_size - 1); vLLM's DFlash proposer implements only the standard layout "
    "and refuses the config.",
    example='draft {"dflash_config": {"sample_from_anchor": true}}',
    fix="Use a draft trained in the standard layout (predictions for block positions 1..block_size-1), "
    "or another engine that supports this variant.",
)
