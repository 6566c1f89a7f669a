"""DF305: the draft config asks for multimodal RoPE, which vLLM's DFlash draft rejects."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    section = ctx.draft.rope.mrope_section
    if not section:
        return
    yield Violation(
        f"draft RoPE has mrope_section {quote(section)}: vLLM's DFlash draft supports plain RoPE only",
        [ctx.dloc("rope.mrope_section")],
    )


RULE = Rule(
    code="DF305",
    name="vllm-draft-mrope",
    severity="error",
    backends=("vllm",),
    check=check,
    what="The draft's RoPE settings have no `mrope_section`.",
    why="vLLM builds the draft with 1-D rotary positions and rejects a multimodal-RoPE config at load; drafts for "
    "VLM targets sometimes copy the target's `rope_scaling` wholesale.",
    example='draft {"rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20]}}',
    fix="Remove `mrope_section` from the draft's rope settings (keep rope_theta); text positions are unchanged by it.",
)
