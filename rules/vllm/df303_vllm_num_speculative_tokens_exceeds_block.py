"""DF303: the num_speculative_tokens given for vLLM does not fit the draft's block."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.vllm._helpers import given_k


def check(ctx: RuleContext):
    d = ctx.draft
    k = given_k(ctx)
    if k is None or d.block_size is None or d.block_size < 2:
        return  # no K: vLLM refuses to start, DF312 says which flag to add
    most = d.block_size - 1
    loc = [*k.locations, ctx.dloc("block_size")]
    if k.value > most:
        yield Violation(
            f"{k.where} {k.value} > block_size - 1 = {most}: vLLM runs a longer block than the draft was trained "
            "on (it never compares the two)",
            loc,
        )
    elif k.value < most:
        yield Violation(
            f"{k.where} {k.value} < block_size - 1 = {most}: vLLM drafts and verifies only {k.value} of the {most} "
            "positions the draft can fill",
            loc,
            severity="info",
        )


RULE = Rule(
    code="DF303",
    name="vllm-num-speculative-tokens-exceeds-block",
    severity="error",
    backends=("vllm",),
    check=check,
    reads=("num_speculative_tokens",),
    what="A K = `num_speculative_tokens` that is given (`--num-speculative-tokens`, a speculators draft's "
    "`speculative_tokens`, or the draft's `n_predict`) is at most `block_size - 1`; fewer is an info.",
    why="vLLM builds each draft block from K: one anchor plus K mask positions (the DFlash 2 convolutions also "
    "take their block length from K + 1), and never reads the draft's `block_size`. The draft attends across "
    "the whole block, so a block longer than the trained one changes every proposal. z-lab uses "
    "K = block_size - 1. vLLM has no default K: DF312 reports a missing one.",
    example='draft {"block_size": 16} with --speculative-config \'{"method": "dflash", "num_speculative_tokens": 16}\'',
    fix="Launch vLLM with num_speculative_tokens = block_size - 1 in --speculative-config.",
    sources=(
        EngineSource("vllm", "vllm/config/vllm.py", "642-645", "lookahead: K + 1 query tokens per request"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "255-256", "DFlash 2 conv block = 1 + K"),
        EngineSource("vllm", "vllm/config/speculative.py", "1600-1618", "K: given, or n_predict, else an error"),
        # 0.34: the method's settings class says it (per-method config modules)
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash/config.py", "53-56", "lookahead: K + 1",
                     version="0.34.0"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/speculator_config.py", "222-227",
                     "K: resolved by the method, else an error", version="0.34.0"),
    ),
)
