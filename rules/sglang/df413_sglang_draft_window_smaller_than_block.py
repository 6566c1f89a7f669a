"""DF413: SGLang's --speculative-draft-window-size is smaller than the DFLASH block."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

SGLANG_DEFAULT_BLOCK = 16  # when neither a flag nor the draft config gives one


def _block(ctx: RuleContext) -> tuple[int, str]:
    """The block length SGLang resolves (num-draft-tokens, else the block-size flag, else the draft's)."""
    o, bs = ctx.options, ctx.draft.block_size
    if o.sglang_num_draft_tokens is not None:
        return o.sglang_num_draft_tokens, "--speculative-num-draft-tokens"
    if o.sglang_dflash_block_size is not None:
        return o.sglang_dflash_block_size, "--speculative-dflash-block-size"
    if bs is not None:
        return bs, "the draft's block_size"
    return SGLANG_DEFAULT_BLOCK, "SGLang's default block size"


def check(ctx: RuleContext):
    window = ctx.options.sglang_draft_window_size
    if window is None:
        return
    block, where = _block(ctx)
    if window >= block:
        return
    yield Violation(
        f"--speculative-draft-window-size {window} < {where} {block}: SGLang stops at start-up "
        "(\"--speculative-draft-window-size must be >= --speculative-num-draft-tokens (block_size)\")",
        [ctx.dloc("block_size")] if where == "the draft's block_size" else [],
    )


RULE = Rule(
    code="DF413",
    name="sglang-draft-window-smaller-than-block",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("draft_window_size", "num_draft_tokens", "dflash_block_size"),
    what="When given, `--speculative-draft-window-size` is at least the DFLASH block length "
    "(`--speculative-num-draft-tokens`, else `--speculative-dflash-block-size`, else the draft's `block_size`).",
    why="The DFLASH draft keeps a window of recent target tokens in its own KV cache; SGLang refuses a window "
    "that cannot hold one block.",
    example='draft {"block_size": 16} with --speculative-draft-window-size 8',
    fix="Raise --speculative-draft-window-size to at least the block size, or omit it (full context).",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "389-425", "block: flag, draft, or 16"),
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "427-434", "window >= block"),
    ),
)
