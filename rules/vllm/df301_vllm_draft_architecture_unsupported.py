"""DF301: vLLM has no DFlash draft class for the draft's architecture name."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def _served(ctx: RuleContext) -> list[str]:
    """Names vLLM serves under method "dflash", after EAGLEConfig's rename, at the selected release."""
    return ctx.engine("vllm").facts["draft_architectures"]


def check(ctx: RuleContext):
    d = ctx.draft
    if d.is_speculators or any(a in _served(ctx) for a in d.architectures):
        return
    support = ctx.family(d.format, "vllm")
    if support is not None and not support.loads:
        return  # a known family vLLM does not load (MiniMax DFlash2): DF009 says so, with its reason
    yield Violation(
        f"draft architectures {quote(d.architectures)} name no vLLM DFlash draft class: vLLM looks each one up as "
        "written if it starts or ends with DFlash, else as DFlash<name>, and stops with \"Model architectures "
        f"[...] are not supported for now\" (vllm {ctx.version('vllm')})",
        [ctx.dloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF301",
    name="vllm-draft-architecture-unsupported",
    severity="error",
    backends=("vllm",),
    check=check,
    what="The draft's `architectures` names a draft class vLLM serves with `method: dflash`: DFlashDraftModel, "
    "DFlash2DraftModel, DFlash2BeamDraftModel, LiLiCorrDraftModel, the Muse-Glimmer assistant, Qwen3-XPress or "
    "the Laguna DFlash draft (the list is data per vLLM release, in dflash_compat/engines/data/engines/vllm.json; DFlash2RicursiveDraftModel from 0.34). Speculators-format "
    "drafts are converted by vLLM and pass.",
    why="vLLM picks the draft's model class by this name. Under `method: dflash` it keeps a name that starts or "
    "ends with `DFlash` and prefixes any other with `DFlash`, then looks it up in its registry; a renamed or "
    "misspelled class is not found. Which runner serves which registered draft is DF310's concern. A known draft "
    "family vLLM does not load at all (MiniMax DFlash2, Domino) is DF009's finding, not repeated here: DF301 judges "
    "the name, DF009 the family.",
    example='draft {"architectures": ["Qwen3DFlashDraft"]}',
    fix="Restore the draft's published `architectures` value (DFlashDraftModel for z-lab DFlash v1, "
    "DFlash2DraftModel for DFlash 2).",
    sources=(
        EngineSource("vllm", "vllm/transformers_utils/configs/eagle.py", "65-75", "method dflash: DFlash<arch> rename"),
        EngineSource("vllm", "vllm/model_executor/models/registry.py", "664-696", "DFlash draft classes registered"),
        EngineSource("vllm", "vllm/model_executor/models/registry.py", "1249-1252", "unknown name: start-up error"),
    ),
)
