"""DF411: SGLang's DFLASH runs only without pipeline parallelism."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    pp = ctx.options.pp_size
    if pp == 1:
        return
    yield Violation(
        f"--pp-size {pp}: SGLang stops at start-up (\"Currently DFLASH speculative decoding only supports "
        "pp_size == 1.\")",
    )


RULE = Rule(
    code="DF411",
    name="sglang-pipeline-parallel-unsupported",
    severity="error",
    backends=("sglang",),
    check=check,
    reads=("pp",),
    what="The pipeline-parallel size given for SGLang (`--pp-size`) is 1.",
    why="SGLang's launch checks for the DFLASH algorithm refuse any pipeline-parallel size other than 1 (the "
    "Qwen3.5 text classes' capture hook refuses it too).",
    example="--pp-size 2",
    fix="Launch SGLang with --pp-size 1 and use tensor parallelism (--tp) to spread the target instead.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "319-322", "pp_size == 1 only"),
        EngineSource("sglang", "sglang/srt/models/qwen3_5_text.py", "134-136", "Qwen3.5 capture: PP=1"),
    ),
)
