"""DF301: vLLM has no DFlash loader for the draft's architecture name."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.engine_support import engine_data
from dflash_compat.quoting import quote


def _loadable(arch: str) -> bool:
    return arch in engine_data("vllm")["draft_architectures"] or (arch.startswith("DFlash") and "Laguna" in arch)


def check(ctx: CheckContext):
    d = ctx.draft
    if d.format == "speculators" or any(_loadable(a) for a in d.architectures):
        return
    v2 = " (a DFlash 2 draft: vLLM loads only DFlash v1)" if d.format == "zlab-v2" else ""
    yield Violation(
        f"draft architectures {quote(d.architectures)} are not a vLLM DFlash draft class{v2}: vLLM stops with "
        "\"Model architectures [...] are not supported for now\"",
        [ctx.dloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF301",
    name="vllm-draft-architecture-unsupported",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A z-lab draft's `architectures` is `[\"DFlashDraftModel\"]` (or the Laguna variant), the names vLLM's "
    "DFlash loader is registered under; speculators-format drafts are converted by vLLM and pass.",
    why="vLLM selects the draft's model class by this name. DFlash 2 drafts (`DFlash2DraftModel`, with "
    "convolutions and a selector) have no vLLM implementation, and a renamed class is simply not found.",
    example='draft {"architectures": ["DFlash2DraftModel"]}',
    fix="Serve a DFlash 2 draft with SGLang or the `dflash` package, or use the v1 draft of the same target on vLLM.",
)
