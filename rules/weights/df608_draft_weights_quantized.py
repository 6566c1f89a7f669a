"""DF608: the draft's weights are quantised although its config says nothing about it."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_MLX_QUANTIZE
from dflash_compat.rules.weights._draft_tensors import FLOAT_DTYPES, is_quant_aux


def check(ctx: RuleContext):
    d = ctx.draft
    if d.quantization_config:
        return  # DF123 reports a declared quantisation
    w = ctx.headers
    low = sorted({dt for n, dt in w.tensor_dtypes.items() if dt not in FLOAT_DTYPES or dt.startswith("F8")})
    aux = [n for n in w.shapes if is_quant_aux(n)]
    fmt = w.metadata.get("format")
    if not low and not aux:
        return
    what = []
    if low:
        what.append(f"dtypes {low}")
    if aux:
        what.append(f"{len(aux)} quantisation tensor(s) such as {aux[0]}")
    yield Violation(
        f"the draft weights are quantised ({'; '.join(what)}{f'; format {fmt}' if fmt else ''}) but its config has "
        "no quantization_config: quantised drafts have silently lost most of their acceptance",
        [ctx.tensor_loc(aux[0] if aux else "*", w.tensor_files.get(aux[0], w.files[0]) if aux else w.files[0])],
    )


RULE = Rule(
    code="DF608",
    name="draft-weights-quantized",
    severity="warning",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's safetensors headers hold only float tensors (bf16/fp32); no int/fp8/fp4 dtypes and no "
    "scale/zero-point companions, unless the config declares a quantization_config (DF123 covers that case).",
    why="A 1-8 layer draft predicting a whole block in one pass is precision-sensitive; quantised drafts "
    "(including MLX-quantised exports) have lost most of their acceptance without an error, and an undeclared "
    "quantisation also fails to load in engines that build float layers from the config (the MLX port's strict "
    "loader). The dflash package quantises on MLX only after loading a bf16 draft (`--draft-bits`).",
    example="draft weights with layers.0.self_attn.q_proj.scales (mlx affine) and U32 packed q_proj.weight",
    fix="Use the unquantised bf16 draft; the memory saved by quantising it is small next to the target.",
    sources=(MLX_LOAD_WEIGHTS, REF_MLX_QUANTIZE),
)
