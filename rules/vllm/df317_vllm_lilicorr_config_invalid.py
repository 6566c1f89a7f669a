"""DF317: a LiLiCorr draft's correlator settings that vLLM refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int


def check(ctx: RuleContext):
    d = ctx.draft
    if d.format != "lilicorr":
        return
    dc = d.raw.get("dflash_config") if isinstance(d.raw.get("dflash_config"), dict) else {}
    topk = dc.get("lilicorr_candidate_topk")
    if is_int(topk) and (topk <= 0 or topk > 16 or topk & (topk - 1)):
        yield Violation(f"dflash_config.lilicorr_candidate_topk {topk} is not a power of two <= 16: vLLM stops at "
                        "load (\"LiLiCorr candidate_topk must be a power of two <= 16.\")",
                        [ctx.dloc("lilicorr_candidate_topk", "dflash_config.lilicorr_candidate_topk")])
    heads, layers = dc.get("lilicorr_num_heads"), dc.get("lilicorr_num_layers")
    hidden = dc.get("lilicorr_hidden_size") or d.hidden_size
    if is_int(heads) and is_int(hidden) and (not is_int(layers) or layers > 0) and (heads <= 0 or hidden % heads):
        yield Violation(f"the LiLiCorr correlator's hidden size {hidden} is not divisible by "
                        f"dflash_config.lilicorr_num_heads {quote(heads)}: vLLM stops at load",
                        [ctx.dloc("lilicorr_num_heads", "dflash_config.lilicorr_num_heads")])


RULE = Rule(
    code="DF317",
    name="vllm-lilicorr-config-invalid",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A LiLiCorr draft's `dflash_config.lilicorr_candidate_topk` is a power of two up to 16, and its "
    "correlator hidden size (`lilicorr_hidden_size`, else the draft's `hidden_size`) is divisible by "
    "`lilicorr_num_heads`.",
    why="vLLM builds the LiLiCorr correlator from these settings and refuses at load a candidate count that is "
    "not a power of two in 1..16, and attention heads that do not split the correlator's hidden size.",
    example='draft {"architectures": ["LiLiCorrDraftModel"], "dflash_config": {"lilicorr_candidate_topk": 12}}',
    fix="Restore the settings from the draft's training config.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/lilicorr.py", "42-46", "heads must divide hidden_size"),
        EngineSource("vllm", "vllm/model_executor/models/lilicorr.py", "139-150",
                     "hidden size and candidate_topk: a power of two <= 16"),
        EngineSource("vllm", "vllm/model_executor/models/lilicorr.py", "203-214", "one correlator layer per "
                     "lilicorr_num_layers"),
    ),
)
