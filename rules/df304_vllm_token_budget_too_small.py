"""DF304: vLLM's batched-token budget cannot hold one verify step for every sequence."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation


def _k(ctx: CheckContext):
    if ctx.options.num_speculative_tokens is not None:
        return ctx.options.num_speculative_tokens
    if ctx.draft.speculative_tokens is not None:
        return ctx.draft.speculative_tokens
    bs = ctx.draft.block_size
    return bs - 1 if bs is not None and bs >= 2 else None


def check(ctx: CheckContext):
    o = ctx.options
    k = _k(ctx)
    if o.max_num_seqs is None or o.max_num_batched_tokens is None or k is None:
        return
    need = o.max_num_seqs * (k + 1)
    if o.max_num_batched_tokens < need:
        yield Violation(
            f"--max-num-batched-tokens {o.max_num_batched_tokens} < --max-num-seqs {o.max_num_seqs} x "
            f"(K {k} + 1) = {need}: a full batch of verify steps does not fit one scheduler step",
            [ctx.dloc("block_size")] if ctx.draft.block_size is not None else [],
        )


RULE = Rule(
    code="DF304",
    name="vllm-token-budget-too-small",
    severity="error",
    backends=("vllm",),
    check=check,
    what="When both are given: `--max-num-batched-tokens` >= `--max-num-seqs` x (K + 1), K = num_speculative_tokens "
    "(default block_size - 1).",
    why="Each running sequence verifies K drafted tokens plus the bonus token per step, so vLLM needs room for "
    "max_num_seqs x (K + 1) tokens in one scheduler step; with less, a full batch of verify steps cannot be scheduled.",
    example="--max-num-seqs 256 --max-num-batched-tokens 2048 with block_size 16 (needs 4096)",
    fix="Raise --max-num-batched-tokens to at least max_num_seqs x (K + 1), or lower --max-num-seqs.",
)
