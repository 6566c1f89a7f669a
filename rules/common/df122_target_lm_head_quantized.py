"""DF122: the target's quantisation covers the output head the draft projects with."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_BIND, REF_EMBED


def check(ctx: RuleContext):
    t = ctx.target
    if not t.lm_head_quantized:
        return
    key = t.key("lm_head_quantized")
    yield Violation(
        f"target is quantised ({quote(t.quant_method) if t.quant_method else 'unknown method'}) and `{key}` does not keep lm_head in full "
        "precision: the draft's logits come from the quantised head",
        [ctx.tloc("lm_head_quantized", key)],
    )


RULE = Rule(
    code="DF122",
    name="target-lm-head-quantized",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="If the target is quantised, its `quantization_config` leaves `lm_head` unquantised: listed in "
    "`modules_to_not_convert` / `ignore` / `exclude_modules` / ..., `\"lm_head\": false`, or a method "
    "(GPTQ, AWQ, bitsandbytes, FP8) that keeps the head by default.",
    why="The draft has no head of its own and projects with the target's; a quantised head shifts the draft's "
    "logits away from what it was trained on, and SGLang's DFlash 2 candidate selection needs a head it can read "
    "(DF404).",
    example='target {"quantization_config": {"quant_method": "compressed-tensors", "ignore": []}}',
    fix="Prefer a quantised checkpoint that keeps lm_head in full precision (most list it in their ignore list).",
    sources=(REF_EMBED, MLX_BIND),
)
