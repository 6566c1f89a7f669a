"""DF414: SGLang drafts a plain DFlash block through a quantised target head only at tensor parallelism 1."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote

# Drafts SGLang proposes through their own head (the DFlash 2 candidate selector, LiLiCorr's correlator,
# Domino's GRU): they never reach the greedy quantised-head path (dflash_worker_v2.py:2690-2796).
OWN_HEAD_FORMATS = ("zlab-v2", "dflash2-beam", "minimax-dflash2", "lilicorr", "domino")


def check(ctx: RuleContext):
    t, d, o = ctx.target, ctx.draft, ctx.options
    tp = o.draft_tp or o.tp
    if not t.lm_head_quantized or tp <= 1 or d.format in OWN_HEAD_FORMATS:
        return
    method = quote(t.quant_method) if t.quant_method else "unknown method"
    yield Violation(
        f"target lm_head is quantised ({method}) and the draft runs at tensor parallelism {tp}: SGLang takes "
        "each draft token's argmax through the head's own kernel and refuses that at tp > 1 on the first "
        f"draft step (\"DFLASH with a quantized target lm_head is only supported at tp=1, got tp_size={tp}.\")",
        [ctx.tloc("lm_head_quantized", t.key("lm_head_quantized"))],
    )


RULE = Rule(
    code="DF414",
    name="sglang-quantized-lm-head-tp",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("tp",),
    what="A DFlash draft that SGLang samples greedily through the target's output head (every draft except "
    "the DFlash 2 selector, LiLiCorr and Domino families) is not paired with a quantised target `lm_head` at "
    "`--tp` (or `--draft-tp`) > 1.",
    why="SGLang's DFLASH worker takes the draft block's tokens as the argmax of the target head over the "
    "draft's hidden states. A head without a dense FP16/BF16/FP32 weight (FP8, INT, GGUF, ...) is evaluated "
    "through its quantisation kernel, which the worker supports only on a single rank: at tp > 1 it raises a "
    "RuntimeError on the first draft step (after the server has started). The quantised path is the same for "
    "every method, so it applies whatever the quantisation.",
    example='target {"quantization_config": {"quant_method": "compressed-tensors", "ignore": []}}, --tp 4',
    fix="Serve at --tp 1, or use a target checkpoint that keeps lm_head unquantised (in the quantisation's "
    "ignore list).",
    sources=(
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1578-1583",
                     "quantised head: RuntimeError unless tp_size == 1"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1616-1619",
                     "no dense head weight: the quantised-head argmax"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "2797-2808",
                     "plain DFlash drafts: greedy argmax over the target head"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "816-824",
                     "dense head: an FP16/BF16/FP32 weight"),
    ),
)
