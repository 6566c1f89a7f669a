"""DF415: SGLang's DFLASH with attention data parallelism: the draft kinds and launch settings it refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

OWN_HEADS = {"domino": "a Domino draft", "lilicorr": "a LiLiCorr draft"}


def check(ctx: RuleContext):
    o, d = ctx.options, ctx.draft
    dp = o.sglang_attn_dp_size
    if dp is None or dp <= 1:
        return
    kind = OWN_HEADS.get(d.format)
    if kind:
        yield Violation(
            f"--attn-dp-size {dp} with {kind}: SGLang's DFLASH worker stops at start-up on CUDA (\"DFLASH with dp "
            "attention supports plain DFlash and DFlash2 drafts; Domino and LiLiCorr heads are not supported.\")",
            [ctx.dloc("architectures", "architectures")],
        )
    cp = o.sglang_attn_cp_size
    if cp is not None and cp != 1:
        yield Violation(
            f"--attn-dp-size {dp} with --attn-cp-size {cp}: SGLang stops at start-up on CUDA (\"DFLASH with dp "
            "attention does not support context parallel.\")",
        )


RULE = Rule(
    code="DF415",
    name="sglang-dp-attention-draft-unsupported",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("attn_dp_size", "attn_cp_size"),
    what="With attention data parallelism (`--attn-dp-size` > 1) the draft is a plain DFlash or DFlash 2 draft "
    "(not Domino, not LiLiCorr) and attention context parallelism is off (`--attn-cp-size` 1). "
    "(`--enable-dp-lm-head` is DF410's.)",
    why="SGLang's DFLASH supports attention data parallelism only on CUDA (and NPU, which skips these checks), "
    "with the output head split across the attention group, without context parallelism, and only for drafts "
    "that draft through the target's head: the Domino and LiLiCorr heads are refused when the worker starts. "
    "SGLang also requires SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION=0 there, which is its default.",
    example='draft {"architectures": ["LiLiCorrDraftModel"]}, --attn-dp-size 8 --enable-dp-lm-head',
    fix="Serve the draft without --attn-dp-size (tensor parallelism instead), use a plain DFlash / DFlash 2 "
    "draft, or drop --attn-cp-size.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "303-317",
                     "dp attention: CUDA, dp LM head, no context parallel, no prefill coordination"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "455-460",
                     "dp attention: Domino and LiLiCorr heads refused"),
        EngineSource("sglang", "sglang/srt/environ.py", "1558",
                     "SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION defaults to False"),
    ),
)
