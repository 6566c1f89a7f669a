"""DF360: on Ascend (vllm-ascend), vLLM's class for the draft is not one the Ascend DFlash proposer accepts."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    if ctx.options.vllm_platform != "ascend":
        return
    classes = ctx.engine("vllm").facts.get("draft_architectures_classes", {})
    accepted = ctx.engine("vllm-ascend").facts.get("draft_classes", [])
    arch = next((a for a in ctx.draft.architectures if a in classes), None)
    if arch is None:
        return  # vLLM itself does not serve the class: DF301
    cls = classes[arch].rsplit(".", 1)[-1]
    release = ctx.version("vllm-ascend")
    if not accepted:
        yield Violation(f"vllm-ascend {release} has no DFlash proposer: it cannot serve a DFlash draft",
                        locations=[ctx.dloc("architectures", "architectures")])
        return
    if cls in accepted:
        return
    yield Violation(f"vLLM builds {quote(arch)} as {cls}; vllm-ascend {release}'s proposer asserts the draft is one of "
                    f"{', '.join(c for c in accepted if 'DFlash' in c)} (AssertionError at the first step on Ascend)",
                    locations=[ctx.dloc("architectures", "architectures")])


RULE = Rule(
    code="DF360",
    name="vllm-ascend-draft-class-unsupported",
    severity="error",
    backends=("vllm",),
    check=check,
    what="On Ascend NPUs (vllm-ascend, `--vllm-platform ascend` or a vllm-ascend image), the draft's vLLM class is "
    "one vllm-ascend's DFlash proposer accepts (DFlashQwen3ForCausalLM: a DFlashDraftModel draft).",
    why="vllm-ascend drives upstream vLLM's draft classes through its own proposer, whose first pass asserts the "
    "draft's class; DFlash 2, XPress, LiLiCorr, Laguna and beam drafts, which upstream vLLM serves, fail there.",
    example='"architectures": ["DFlash2DraftModel"] with --vllm-platform ascend',
    fix="Use a DFlashDraftModel draft on Ascend, or serve this draft with upstream vLLM on a GPU.",
    sources=(
        EngineSource("vllm-ascend", "vllm_ascend/spec_decode/llm_base_proposer.py", "756-767",
                     "eagle3 / dflash: isinstance assert on the draft model's class"),
        EngineSource("vllm-ascend", "vllm_ascend/spec_decode/__init__.py", "48-49", "dflash -> AscendDflashProposer"),
        EngineSource("vllm", "vllm/model_executor/models/registry.py", "664-666", "draft architectures -> classes"),
    ),
    requires=("vllm-ascend.draft_classes", "vllm.draft_architectures_classes"),
)
