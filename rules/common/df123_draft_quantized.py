"""DF123: the draft checkpoint itself is quantised."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_LOAD, REF_MLX_QUANTIZE


def check(ctx: RuleContext):
    q = ctx.draft.quantization_config
    if not q:
        return
    method = quote(q["quant_method"]) if q.get("quant_method") else "unknown method"
    yield Violation(
        f"draft is quantised ({method}): quantised drafts have silently lost most of their acceptance",
        [ctx.dloc("quantization_config")],
    )


RULE = Rule(
    code="DF123",
    name="draft-quantized",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft's config has no `quantization_config`.",
    why="A DFlash draft is small (1-8 layers) and its one-pass block prediction is sensitive to precision: "
    "quantised drafts, fp16 casts and quantised draft KV caches have produced near-zero acceptance without any "
    "error. The dflash reference loads drafts in bf16 (its MLX path can quantise a bf16 draft after loading, "
    "`--draft-bits 4|8`, which is the way to try it and measure).",
    example='draft {"quantization_config": {"quant_method": "fp8"}}',
    fix="Use the bf16 release of the draft; the memory it saves is small next to the target.",
    sources=(REF_LOAD, MLX_LOAD_WEIGHTS, REF_MLX_QUANTIZE),
)
