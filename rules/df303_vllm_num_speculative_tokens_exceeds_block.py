"""DF303: vLLM's num_speculative_tokens does not fit the draft's block."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation


def check(ctx: CheckContext):
    d = ctx.draft
    if d.block_size is None or d.block_size < 2:
        return
    most = d.block_size - 1
    if ctx.options.num_speculative_tokens is not None:
        k, where, loc = ctx.options.num_speculative_tokens, "--num-speculative-tokens", []
    elif d.speculative_tokens is not None:
        k, where, loc = d.speculative_tokens, "speculative_tokens", [ctx.dloc("speculative_tokens")]
    else:
        return  # vLLM's default is block_size - 1
    loc = [*loc, ctx.dloc("block_size")]
    if k > most:
        yield Violation(
            f"{where} {k} > block_size - 1 = {most}: the draft fills only {most} positions per block "
            "(vLLM does not check this)",
            loc,
        )
    elif k < most:
        yield Violation(
            f"{where} {k} < block_size - 1 = {most}: vLLM verifies only {k} of the {most} drafted tokens",
            loc,
            severity="info",
        )


RULE = Rule(
    code="DF303",
    name="vllm-num-speculative-tokens-exceeds-block",
    severity="error",
    backends=("vllm",),
    check=check,
    what="K = `num_speculative_tokens` (the option you give, else a speculators draft's `speculative_tokens`) "
    "is at most `block_size - 1`; fewer is an info.",
    why="One draft pass proposes `block_size - 1` tokens after the anchor; vLLM does not validate K against the "
    "block, so a larger K asks for positions the draft was never trained to fill. z-lab uses K = block_size - 1.",
    example='draft {"block_size": 16} with --speculative-config \'{"method": "dflash", "num_speculative_tokens": 16}\'',
    fix="Launch vLLM with num_speculative_tokens = block_size - 1 (or omit it).",
)
