"""DF310: only vLLM's V2 model runner serves this draft; the V1 runner refuses it at start-up."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def _v1_features(ctx: RuleContext) -> tuple[list[str], list]:
    """The features V1 names in its refusal, and where the draft config asks for them."""
    d = ctx.draft
    features, locs = [], []
    refused = [a for a in d.architectures if a in ctx.engine("vllm").facts.get("draft_v1_refused", ())]
    if refused:
        features.append("xpress speculative decoding" if "XPress" in refused[0] else "DFlash candidate-head drafts")
        locs.append(ctx.dloc("architectures", "architectures"))
    kinds = d.layer_types
    if kinds and "sliding_attention" in kinds and any(k != "sliding_attention" for k in kinds):
        features.append("mixed sliding/full dflash drafts")
        locs.append(ctx.dloc("layer_types"))
    return features, locs


def check(ctx: RuleContext):
    features, locs = _v1_features(ctx)
    if not features:
        return
    yield Violation(
        "vLLM serves this draft only with its V2 model runner (the default): the V1 runner stops at start-up with "
        f"\"Model Runner V1 does not support: {', '.join(features)}\"",
        locs,
    )


RULE = Rule(
    code="DF310",
    name="vllm-draft-needs-v2-runner",
    severity="info",
    backends=("vllm",),
    check=check,
    # vLLM 0.34 has no V1 runner to fall back to (vllm/v1/spec_decode/ is gone)
    versions={"vllm": "<0.34.0"},
    what="Notes a draft that only vLLM's V2 model runner serves: a candidate-head draft (DFlash 2, DFlash2-Beam, "
    "LiLiCorr), a Qwen3-XPress refiner, or `layer_types` mixing sliding and full attention.",
    why="vLLM 0.33 runs the V2 model runner unless VLLM_USE_V2_MODEL_RUNNER=0 is set, Triton is missing, or V2 "
    "reports a feature it lacks (e.g. suffix decoding, EAGLE parallel drafting); it then uses V1, which has no "
    "candidate heads or XPress refiner and cannot give a draft two KV-cache groups, and refuses these drafts.",
    example='draft {"architectures": ["DFlash2DraftModel"]}, or {"layer_types": ["sliding_attention", '
    '"full_attention"], "sliding_window": 2048}',
    fix="Leave VLLM_USE_V2_MODEL_RUNNER unset (or set it to 1) and avoid the options that make vLLM fall back to V1.",
    sources=(
        EngineSource("vllm", "vllm/config/vllm.py", "731-767", "V2 unless forced off, no Triton, or unsupported"),
        EngineSource("vllm", "vllm/config/vllm.py", "769-797", "candidate-head drafts; mixed sliding/full layers"),
        EngineSource("vllm", "vllm/config/vllm.py", "3110-3137", "V1 refuses XPress, mixed layers, candidate heads"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "127-137", "V1: mixed layers refused"),
    ),
)
