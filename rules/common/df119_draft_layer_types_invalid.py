"""DF119: the draft's per-layer attention types do not describe its layers."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.contract import DRAFT_LAYER_TYPES as KNOWN
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules._sources import MLX_LOAD_DRAFT, REF_ATTENTION

SGL_LAYER_TYPES = EngineSource("sglang", "sglang/srt/models/dflash.py", "166-190",
                               "layer_types: one entry per layer, full/sliding only, else ValueError")
VLLM_SLIDING = EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "145-153",
                            "a sliding layer without a window: ValueError")


def check(ctx: RuleContext):
    d = ctx.draft
    kinds = d.layer_types
    if kinds is None:
        return
    loc = [ctx.dloc("layer_types")]
    if len(kinds) != d.num_hidden_layers:
        yield Violation(
            f"draft layer_types has {len(kinds)} entries for {d.num_hidden_layers} layers (num_hidden_layers)",
            [*loc, ctx.dloc("num_hidden_layers")],
        )
    unknown = sorted({quote(k) for k in kinds if k not in KNOWN})
    if unknown:
        yield Violation(f"draft layer_types has unknown types {quote_items(unknown, raw=True)} (known: {', '.join(KNOWN)})", loc)
    if "sliding_attention" in kinds and d.sliding_window is None:
        yield Violation(
            "draft layer_types has sliding_attention layers but sliding_window is not set",
            [*loc, ctx.dloc("sliding_window")],
        )


RULE = Rule(
    code="DF119",
    name="draft-layer-types-invalid",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="If the draft config has `layer_types`: one entry per draft layer, each `full_attention` or "
    "`sliding_attention`, and `sliding_window` set when any layer slides.",
    why="Loaders build each draft layer from its entry: SGLang and MLX raise ValueError on a bad list, vLLM "
    "errors on a sliding layer without a window, and the dflash reference treats an unknown type as full "
    "attention and a sliding layer without a window as unwindowed, so a bad list misassigns windows silently.",
    example='draft {"num_hidden_layers": 5, "layer_types": ["sliding_attention", "full_attention"]}',
    fix="Restore `layer_types` / `sliding_window` from the draft's training config.",
    sources=(REF_ATTENTION, MLX_LOAD_DRAFT, SGL_LAYER_TYPES, VLLM_SLIDING),
)
