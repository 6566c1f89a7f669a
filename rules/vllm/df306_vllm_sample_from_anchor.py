"""DF306: the draft samples from the anchor position, a layout vLLM's DFlash proposers do not run."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.specs import get_dotted

NESTED = "dflash_config.sample_from_anchor"


def check(ctx: RuleContext):
    d = ctx.draft
    if d.sample_from_anchor is not True:
        return
    if get_dotted(d.raw, NESTED) is True:
        yield Violation(
            "draft sets dflash_config.sample_from_anchor = true: vLLM's V2 model runner refuses it "
            "(\"sample_from_anchor=True is not supported for DFlash\")"
            + ("; the V1 runner ignores it and drafts in the standard layout"
               if ctx.engine("vllm").feature("v1_dflash_proposer") else ""),
            [ctx.dloc("sample_from_anchor", NESTED)],
        )
        return
    yield Violation(
        f"draft sets {d.key('sample_from_anchor')} = true, where vLLM's DFlash proposers do not look (they read "
        "dflash_config.sample_from_anchor): vLLM drafts in the standard layout, not the one the draft was trained in",
        [ctx.dloc("sample_from_anchor")],
        severity="warning",
    )


RULE = Rule(
    code="DF306",
    name="vllm-sample-from-anchor",
    severity="error",
    backends=("vllm",),
    check=check,
    what="The draft config does not set `sample_from_anchor` to true (nested in `dflash_config`: error; at the top "
    "level, which vLLM's DFlash proposers do not read: warning).",
    why="It marks a layout variant in which the anchor position is itself a prediction (block_size proposals per "
    "block instead of block_size - 1). vLLM's DFlash proposers implement only the standard layout: the V2 model "
    "runner (the default) refuses the nested key at start-up, and the V1 runner never reads it, so a draft "
    "trained in the other layout runs with proposals shifted by one position.",
    example='draft {"dflash_config": {"sample_from_anchor": true}}',
    fix="Use a draft trained in the standard layout (predictions for block positions 1..block_size-1), "
    "or an engine that supports this variant.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py", "80-89", "V2 refuses the flag"),
        EngineSource("vllm", "vllm/v1/spec_decode/dflash.py", "23", "V1 DFlashProposer: flag never read"),
    ),
)
