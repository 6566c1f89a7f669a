"""DF304: vLLM's batched-token budget is too small for the DFlash draft pass."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.vllm._helpers import given_k


def _k(ctx: RuleContext):
    """(K, how it was chosen): the given K, else the z-lab choice block_size - 1 as an assumption."""
    k = given_k(ctx)
    if k is not None:
        return k.value, f"K {k.value}"
    bs = ctx.draft.block_size
    if bs is not None and bs >= 2:
        return bs - 1, f"K {bs - 1} (assumed: block_size - 1)"
    return None, ""


def check(ctx: RuleContext):
    o = ctx.options
    budget = o.max_num_batched_tokens
    k, k_text = _k(ctx)
    if budget is None or k is None:
        return
    per_seq = k + 1  # the draft pass's query tokens per request: the anchor plus K masks
    if budget <= per_seq:
        yield Violation(
            f"--max-num-batched-tokens {budget} <= {k_text} + 1 = {per_seq}: vLLM refuses to start (\"VllmConfig "
            "does not have enough slots to schedule a token and support the speculative decoding settings\")",
            [ctx.dloc("block_size")] if ctx.draft.block_size is not None else [],
        )
        return
    if o.max_num_seqs is not None and budget // per_seq < o.max_num_seqs:
        cap = budget // per_seq
        yield Violation(
            f"--max-num-batched-tokens {budget} // ({k_text} + 1) = {cap} < --max-num-seqs {o.max_num_seqs}: vLLM "
            f"warns and runs at most {cap} sequences at a time (it overrides max_num_active_seqs to {cap})",
            [ctx.dloc("block_size")] if ctx.draft.block_size is not None else [],
            severity="warning",
        )


RULE = Rule(
    code="DF304",
    name="vllm-token-budget-too-small",
    severity="error",
    backends=("vllm",),
    check=check,
    reads=("max_num_batched_tokens", "max_num_seqs", "num_speculative_tokens"),
    what="When given, `--max-num-batched-tokens` exceeds K + 1 (else vLLM refuses to start: error); with "
    "`--max-num-seqs` also given, `max-num-batched-tokens // (K + 1)` >= `max-num-seqs` (else vLLM caps the "
    "concurrency: warning). K = num_speculative_tokens, assumed block_size - 1 when not given.",
    why="Each DFlash draft pass needs K + 1 query tokens per request within one step's token budget. vLLM stops "
    "at start-up when the budget cannot hold even one request's pass, and otherwise lowers the number of "
    "sequences it runs at once to budget // (K + 1), with only a log warning.",
    example="--max-num-seqs 256 --max-num-batched-tokens 2048 with K 15: vLLM runs at most 128 sequences",
    fix="Raise --max-num-batched-tokens to at least max_num_seqs x (K + 1), or lower --max-num-seqs to the cap.",
    sources=(
        EngineSource("vllm", "vllm/config/vllm.py", "642-645", "DFlash lookahead: K + 1"),
        EngineSource("vllm", "vllm/config/vllm.py", "2371-2377", "budget <= K + 1: start-up error"),
        EngineSource("vllm", "vllm/config/vllm.py", "2379-2395", "budget // (K + 1) < max seqs: warn and cap"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash/config.py", "53-60",
                     "DFlash lookahead K + 1; draft seqs = budget // (K + 1)", version="0.34.0"),
        EngineSource("vllm", "vllm/config/vllm.py", "2291-2298", "budget <= lookahead: start-up error",
                     version="0.34.0"),
        EngineSource("vllm", "vllm/config/vllm.py", "2300-2312", "fewer draft seqs than max seqs: warn and cap",
                     version="0.34.0"),
    ),
)
