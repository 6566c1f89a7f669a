"""DF410: SGLang's DFLASH with attention data parallelism needs --enable-dp-lm-head."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    o = ctx.options
    if o.sglang_attn_dp_size is None or o.sglang_attn_dp_size <= 1:
        return
    if ctx.engine("sglang").feature("dflash_dp_attention_refused"):  # up to 0.5.22: refused off NPU, head or not
        yield Violation(
            f"--attn-dp-size {o.sglang_attn_dp_size}: SGLang {ctx.version('sglang')} refuses DFLASH with attention "
            "data parallelism on CUDA (\"Currently DFLASH speculative decoding does not support dp attention on "
            "non-NPU devices.\"); SGLang 0.5.23 accepts it with --enable-dp-lm-head",
            fix="Drop attention data parallelism for DFLASH on this SGLang release, or upgrade SGLang to 0.5.23 and "
            "add --enable-dp-lm-head.",
        )
        return
    if o.sglang_enable_dp_lm_head:
        return
    yield Violation(
        f"--attn-dp-size {o.sglang_attn_dp_size} without --enable-dp-lm-head: SGLang stops at start-up on CUDA "
        "(\"DFLASH with dp attention requires --enable-dp-lm-head.\")",
    )


RULE = Rule(
    code="DF410",
    name="sglang-dp-attention-without-dp-lm-head",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("attn_dp_size", "enable_dp_attention", "dp"),
    what="With attention data parallelism (`--attn-dp-size` > 1; formerly `--dp-size N --enable-dp-attention`), "
    "`--enable-dp-lm-head` is given.",
    why="DFLASH's greedy projection and the DFlash 2 selector both use the target's output head. With attention "
    "data parallelism SGLang 0.5.23 supports that only when the head is split across the attention TP group "
    "(`--enable-dp-lm-head`) and refuses to start otherwise (on CUDA; NPU builds skip the check). SGLang 0.5.21 "
    "and 0.5.22 refuse DFLASH with attention data parallelism on CUDA altogether.",
    example="--attn-dp-size 8 (no --enable-dp-lm-head)",
    fix="Add --enable-dp-lm-head to the SGLang launch.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "303-308", "DP attention: dp LM head"),
        EngineSource("sglang", "sglang/srt/runtime_context.py", "191-199", "DP attention: attn_dp_size > 1"),
        EngineSource("sglang", "sglang/srt/arg_groups/parallel_hook.py", "39-61", "--enable-dp-attention: old form"),
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "298-299",
                     "0.5.21-0.5.22: DFLASH refuses dp attention off NPU", version="0.5.22"),
    ),
)
