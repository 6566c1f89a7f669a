"""DF513: an MLX-quantised draft (`quantization` in its config) that the MLX port cannot load."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_ATTENTION, MLX_LOAD_WEIGHTS, REF_MLX_QUANTIZE


def _quantization(raw):
    q = raw.get("quantization")
    return q if isinstance(q, dict) and "bits" in q else None


def check(ctx: RuleContext):
    q = _quantization(ctx.draft.raw)
    if q is None:
        return
    bits, group = q.get("bits"), q.get("group_size", 64)
    yield Violation(
        f"the draft is quantised by MLX ({quote(bits)}-bit, group size {quote(group)}, mode {quote(q.get('mode', 'affine'))}): "
        "dflash.model_mlx.load_draft builds full-precision layers and load_weights fails with "
        "'Received N parameters not in model: fc.biases, fc.scales, ...'"
        + ("; a draft this low-bit has also given near-zero acceptance" if isinstance(bits, int) and bits < 8 else ""),
        [ctx.dloc("quantization", "quantization")],
    )


RULE = Rule(
    code="DF513",
    name="mlx-draft-quantized-unloadable",
    severity="error",
    backends=("mlx",),
    check=check,
    what="The draft's config.json has no mlx-lm `quantization` block (what `mlx_lm.convert -q` or `nn.quantize` "
    "exports write; transformers-style quantization_config is DF123).",
    why="The MLX port builds its draft layers as nn.Linear from the config and loads the checkpoint strictly, so the "
    "packed weights' `.scales` / `.biases` are rejected at load. Quantising a 1-8 layer draft also costs most of its "
    "acceptance (DF123), while saving little next to the target.",
    example='draft {"architectures": ["DFlashDraftModel"], "quantization": {"group_size": 64, "bits": 4}}',
    fix="Use the unquantised (bf16) draft; to try a quantised one with the dflash package, let it quantise the "
    "bf16 draft after loading (`dflash generate mlx ... --draft-bits 4` or `8`). dflash-compat's MLX runtime can "
    "load the quantised checkpoint (`dflash-check smoke --backend mlx`) to measure what it costs.",
    sources=(MLX_ATTENTION, MLX_LOAD_WEIGHTS, REF_MLX_QUANTIZE),
)
