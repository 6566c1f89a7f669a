"""DF404: a DFlash 2 draft on a target whose output head is quantised with a method SGLang may lack a head kernel for."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, EngineSource, Rule, Violation
from dflash_compat.quoting import quote

# ModelOpt FP8 / NVFP4 heads: SGLang checks their runtime layout and scores candidates through them.
MODELOPT_ALGOS = {"FP8", "NVFP4", "W4A16_NVFP4"}


def _modelopt(quant: dict) -> bool:
    method = str(quant.get("quant_method", "")).lower()
    if method in ("modelopt_fp8", "modelopt_fp4"):
        return True
    return method == "modelopt" and str(quant.get("quant_algo", "")).upper() in MODELOPT_ALGOS


def check(ctx: CheckContext):
    t, d = ctx.target, ctx.draft
    # SGLang builds the same candidate selector for DFlash 2, DFlash2-Beam and MiniMax DFlash2 (srt/models/dflash.py).
    if d.format not in ("zlab-v2", "dflash2-beam", "minimax-dflash2") or not t.lm_head_quantized:
        return
    if _modelopt(t.quantization_config or {}):
        return
    yield Violation(
        f"DFlash 2 draft with a target whose lm_head is quantised ({quote(t.quant_method) if t.quant_method else 'unknown method'}): SGLang "
        "scores the candidates through the head's own quantised kernel when its quantisation method provides one, "
        "and otherwise stops at the first step (\"DFlash candidate top-k requires a dense FP16/BF16/FP32 target "
        "lm_head or a supported lm_head.quant_method\")",
        [ctx.dloc("architectures", "architectures"), ctx.tloc("lm_head_quantized", t.key("lm_head_quantized"))],
    )


RULE = Rule(
    code="DF404",
    name="sglang-v2-quantized-lm-head",
    severity="info",
    backends=("sglang",),
    check=check,
    what="Notes a DFlash 2 draft paired with a target whose `lm_head` is quantised by a method other than "
    "ModelOpt FP8 / NVFP4 (those SGLang accepts).",
    why="The DFlash 2 candidate selector takes its top-k candidates from the target's output head. SGLang uses a "
    "dense FP16/BF16/FP32 head directly and a quantised one through the quantisation method's own kernel (it "
    "checks the runtime layout of ModelOpt FP8/NVFP4 heads); a head with neither stops the first DFlash 2 step. "
    "Which methods give SGLang a head kernel is decided at load, not by the config.",
    example='draft {"architectures": ["DFlash2DraftModel"]}, target {"quantization_config": '
    '{"quant_method": "compressed-tensors", "ignore": []}}',
    fix="If SGLang stops with the message above, use a target checkpoint that keeps lm_head unquantised (or a "
    "ModelOpt FP8/NVFP4 one), or the DFlash v1 draft.",
    sources=(
        EngineSource("sglang", "sglang/srt/models/dflash.py", "107-129", "dense head, or the head's quant kernel"),
        EngineSource("sglang", "sglang/srt/layers/logits_processor.py", "1599-1663",
                     "which quantised heads are used (ModelOpt layouts checked)"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "899-910", "unsupported head: eager path"),
    ),
)
