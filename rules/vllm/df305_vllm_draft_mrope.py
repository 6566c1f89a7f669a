"""DF305: the draft config asks for multimodal RoPE, which vLLM's V1 model runner refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    section = ctx.draft.rope.mrope_section
    if not section:
        return
    yield Violation(
        f"draft RoPE has mrope_section {quote(section)}: vLLM's default V2 model runner drafts with text positions (the "
        "same as plain RoPE); its V1 runner refuses the draft (\"Speculative Decoding with draft models or parallel "
        "drafting does not support M-RoPE yet\")",
        [ctx.dloc("rope.mrope_section")],
    )


RULE = Rule(
    code="DF305",
    name="vllm-draft-mrope",
    severity="info",
    backends=("vllm",),
    check=check,
    # vLLM 0.34 removed the V1 runner (vllm/v1/spec_decode/ is gone): only the V2 runner's text positions remain
    versions={"vllm": "<0.34.0"},
    what="Notes a draft whose RoPE settings carry an `mrope_section`.",
    why="vLLM's V1 model runner refuses M-RoPE in any parallel-drafting proposer, DFlash included. The V2 runner "
    "(the default) builds the M-RoPE module and feeds it one text position per token, which is plain RoPE. V1 is "
    "used when VLLM_USE_V2_MODEL_RUNNER=0 is set, when Triton is missing, or when V2 reports a feature it lacks. "
    "Drafts for VLM targets often copy the target's `rope_scaling` wholesale.",
    example='draft {"rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20]}}',
    fix="Remove `mrope_section` from the draft's rope settings (keep rope_theta); text positions are unchanged by it.",
    sources=(
        EngineSource("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "225-228", "V1: parallel drafting checks"),
        EngineSource("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "344-349", "V1: M-RoPE refused"),
        EngineSource("vllm", "vllm/model_executor/layers/rotary_embedding/mrope.py", "394", "1-D positions accepted"),
        EngineSource("vllm", "vllm/config/vllm.py", "731-767", "V2 runner unless forced off or unsupported"),
    ),
)
