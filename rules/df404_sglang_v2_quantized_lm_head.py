"""DF404: a DFlash 2 draft on a target whose output head is quantised breaks SGLang's selector."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    t, d = ctx.target, ctx.draft
    if d.format != "zlab-v2" or not t.lm_head_quantized:
        return
    yield Violation(
        f"DFlash 2 draft with a target whose lm_head is quantised ({quote(t.quant_method) if t.quant_method else 'unknown method'}): "
        "SGLang's candidate selector needs the full-precision head",
        [ctx.dloc("architectures", "architectures"), ctx.tloc("lm_head_quantized", t.key("lm_head_quantized"))],
    )


RULE = Rule(
    code="DF404",
    name="sglang-v2-quantized-lm-head",
    severity="error",
    backends=("sglang",),
    check=check,
    what="A DFlash 2 draft (`DFlash2DraftModel`) is paired with a target whose `lm_head` is not quantised.",
    why="The DFlash 2 candidate selector scores tokens through the target's output head; SGLang's implementation "
    "does not work with a quantised head.",
    example='draft {"architectures": ["DFlash2DraftModel"]}, target {"quantization_config": '
    '{"quant_method": "compressed-tensors", "ignore": []}}',
    fix="Use a target checkpoint that keeps lm_head unquantised, or the DFlash v1 draft.",
)
