"""DF417: MiMo DFlash extras (attention sink bias, value scale) of a type SGLang refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    raw = ctx.draft.raw
    dc = raw.get("dflash_config")
    if not isinstance(dc, dict):
        return
    sink = dc.get("attention_sink_bias", False)
    if not isinstance(sink, bool):
        yield Violation(f"dflash_config.attention_sink_bias is {quote(sink)}: SGLang stops at start-up (\"DFLASH "
                        "dflash_config.attention_sink_bias must be a bool\")",
                        [ctx.dloc("attention_sink_bias", "dflash_config.attention_sink_bias")])
    scale = dc.get("attention_value_scale")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        yield Violation(f"dflash_config.attention_value_scale is {quote(scale)}: SGLang stops at start-up "
                        "(\"DFLASH dflash_config.attention_value_scale must be int|float|None\")",
                        [ctx.dloc("attention_value_scale", "dflash_config.attention_value_scale")])


RULE = Rule(
    code="DF417",
    name="sglang-mimo-extras-invalid",
    severity="error",
    backends=("sglang",),
    check=check,
    what="`dflash_config.attention_sink_bias` (MiMo DFlash drafts' per-head sink bias) is a bool and "
    "`dflash_config.attention_value_scale` a number or null.",
    why="SGLang reads both when it parses any DFlash draft config and refuses other types (a string \"true\", "
    "a 0/1 flag, a quoted number) before the draft is built.",
    example='draft {"dflash_config": {"attention_sink_bias": "true", "attention_value_scale": "0.5"}}',
    fix="Write attention_sink_bias as true/false and attention_value_scale as a JSON number (or drop it).",
    sources=(
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "704-724",
                     "attention_sink_bias: bool; attention_value_scale: int|float|None"),
    ),
)
