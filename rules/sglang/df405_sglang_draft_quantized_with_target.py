"""DF405: SGLang's --quantization also quantises the draft unless the draft gets its own setting."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    o = ctx.options
    method = o.sglang_quantization
    if not method or method == "unquant" or o.sglang_draft_quantization is not None:
        return
    yield Violation(
        f"--quantization {method} without --speculative-draft-model-quantization: SGLang loads the draft with "
        f"{method} as well, which can lose most of the acceptance",
    )


RULE = Rule(
    code="DF405",
    name="sglang-draft-quantized-with-target",
    severity="warning",
    backends=("sglang",),
    check=check,
    reads=("draft_quantization", "quantization"),
    what="When `--quantization` is given for SGLang (this check's --quantization), "
    "`--speculative-draft-model-quantization` is given too.",
    why="SGLang's draft quantisation defaults to the `--quantization` value given at launch (not to the target "
    "checkpoint's own quantization_config, which it only uses for the target). A DFlash draft is small and "
    "precision-sensitive; quantised along with the target it can silently drop to about zero accepted tokens.",
    example="--quantization fp8 (no --speculative-draft-model-quantization)",
    fix="Keep the draft unquantised: add --speculative-draft-model-quantization unquant to the SGLang launch "
    "(and pass --draft-quantization unquant to this check).",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/serving_hook.py", "675-690", "draft default: --quantization"),
        EngineSource("sglang", "sglang/srt/arg_groups/serving_hook.py", "704-709", "unquant: draft not quantised"),
        EngineSource("sglang", "sglang/srt/configs/model_config.py", "945-949", "draft model uses that value"),
    ),
)
