"""DF404: a DFlash 2 draft on a target whose ModelOpt FP8/NVFP4 head SGLang uses only in one runtime layout."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote

# ModelOpt FP8 / NVFP4 heads: SGLang runs the head's kernel only when the loaded weight's dtype and scale
# attributes match the method (logits_processor.py:1614-1663); every other method with an `apply` is used
# as is (logits_processor.py:1663).
MODELOPT_ALGOS = {"FP8", "NVFP4", "W4A16_NVFP4"}
# The drafts SGLang drafts through the candidate selector (srt/models/dflash.py candidate_topk).
SELECTOR_FORMATS = ("zlab-v2", "dflash2-beam", "minimax-dflash2")


def modelopt(quant: dict) -> bool:
    method = str(quant.get("quant_method", "")).lower()
    if method in ("modelopt_fp8", "modelopt_fp4"):
        return True
    return method == "modelopt" and str(quant.get("quant_algo", "")).upper() in MODELOPT_ALGOS


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    if d.format not in SELECTOR_FORMATS or not t.lm_head_quantized:
        return
    quant = t.quantization_config or {}
    if not modelopt(quant):
        return
    algo = quant.get("quant_algo") or t.quant_method
    yield Violation(
        f"DFlash 2 draft with a target whose lm_head is ModelOpt-quantised ({quote(str(algo))}): SGLang scores "
        "the candidates through the ModelOpt head kernel only when the loaded head has that method's runtime "
        "layout (weight dtype and scale tensors); a head loaded otherwise is neither dense nor usable and the "
        "first DFlash 2 step stops (\"DFlash candidate top-k requires a dense FP16/BF16/FP32 target lm_head or "
        "a supported lm_head.quant_method\")",
        [ctx.dloc("architectures", "architectures"), ctx.tloc("lm_head_quantized", t.key("lm_head_quantized"))],
    )


RULE = Rule(
    code="DF404",
    name="sglang-v2-quantized-lm-head",
    severity="info",
    backends=("sglang",),
    check=check,
    what="Notes a DFlash 2 draft paired with a target whose `lm_head` is quantised with ModelOpt FP8 or NVFP4, "
    "the methods whose head SGLang uses only when the loaded layout matches.",
    why="The DFlash 2 candidate selector takes its top-k candidates from the target's output head. SGLang uses a "
    "dense FP16/BF16/FP32 head directly, and a quantised head through its quantisation method's kernel: any "
    "method with a kernel is accepted as is, except the ModelOpt FP8 / NVFP4 methods, which SGLang uses only "
    "when the loaded weight has the method's dtype and scale tensors (a draft sharing the head may carry a "
    "stale ModelOpt method). When that check fails the head is neither dense nor usable and the first DFlash 2 "
    "step stops. Which layout a head loads with is decided at load time, not by the config, hence a note.",
    example='draft {"architectures": ["DFlash2DraftModel"]}, target {"quantization_config": '
    '{"quant_method": "modelopt", "quant_algo": "FP8"}}',
    fix="If SGLang stops with the message above, use a target checkpoint that keeps lm_head unquantised (list "
    "it in the ModelOpt exclude_modules), or the DFlash v1 draft.",
    sources=(
        EngineSource("sglang", "sglang/srt/models/dflash.py", "107-129", "dense head, or the head's quant kernel"),
        EngineSource("sglang", "sglang/srt/layers/logits_processor.py", "1599-1663",
                     "any method with apply is used; ModelOpt FP8/NVFP4 only in their runtime layout"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "899-910", "unsupported head: eager path"),
    ),
)
