"""DF405: SGLang quantises the draft like a quantised target unless told otherwise."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    t = ctx.target
    if not t.quantization_config:
        return
    yield Violation(
        f"target is quantised ({quote(t.quant_method) if t.quant_method else 'unknown method'}): by default SGLang loads the draft with the "
        "same quantisation, which can lose all acceptance",
        [ctx.tloc("quantization_config", "quantization_config")],
    )


RULE = Rule(
    code="DF405",
    name="sglang-draft-quantized-with-target",
    severity="warning",
    backends=("sglang",),
    check=check,
    what="Notes a quantised target on SGLang, whose default is to quantise the draft the same way.",
    why="A DFlash draft is small and precision-sensitive; quantised with the target it can silently drop to "
    "about zero accepted tokens.",
    example='target {"quantization_config": {"quant_method": "fp8"}}',
    fix="Keep the draft unquantised: in SGLang builds that have it, pass "
    "--speculative-draft-model-quantization unquant.",
)
