"""DF126: the engines scale the draft's block embedding or logits differently for this pair."""

from __future__ import annotations

import math
from typing import Optional

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import (
    HF_SCALED_EMBED,
    MLX_BIND,
    MLX_EMBED,
    MLX_LOAD_DRAFT,
    MLX_SCALES,
    MLXLM_EMBED_SCALE,
    MLXLM_GEMMA3_SCALE,
    REF_BLOCK,
    REF_DRAFT_VALUE,
    REF_EMBED,
    REF_LOGITS,
    SGL_EMBED,
    SGL_EMBED_MODULE,
    SGL_LOGITS,
    SGL_V2_LOGITS,
    VLLM_EMBED,
    VLLM_SHARE_EMBED,
    VLLM_V1_LOGITS,
    VLLM_V2_EMBED,
    VLLM_V2_LOGITS,
    VLLM_V2_SHARE_EMBED,
)
from dflash_compat.specs import MISSING, get_dotted

# Targets whose embedding MODULE multiplies by sqrt(hidden_size) in SGLang (the DFLASH worker embeds with
# that module); SGLang's other models scale inline, after the lookup.
SGLANG_SCALED_EMBEDDING_TYPES = frozenset({"gemma3", "gemma3_text", "gemma4", "gemma4_text"})
# mlx-lm models with an `embed_scale` attribute next to embed_tokens (sqrt(hidden_size)): the MLX port's bind()
# multiplies the block by it. mlx-lm's gemma / gemma2 / gemma3 scale inline and have none.
MLX_EMBED_SCALE_TYPES = frozenset({"gemma4", "gemma4_text", "gear"})

SGL_SCALED_MODULE = EngineSource("sglang", "sglang/srt/models/gemma4_causal.py", "887-892",
                                 "Gemma 4 embed_tokens = Gemma3TextScaledWordEmbedding(embed_scale=sqrt(hidden))")

ENGINES = ("dflash", "vllm", "sglang", "mlx")
LABEL = {"input_embedding_scale": "block embedding scale", "output_multiplier": "logit multiplier",
         "final_logit_softcapping": "logit soft-cap"}


def _num(raw: dict, key: str) -> Optional[float]:
    value = get_dotted(raw, key)
    if value is MISSING or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _types(ctx: RuleContext) -> set[str]:
    return {x for x in (ctx.target.model_type, ctx.target.text_model_type) if x}


def _module_scale(ctx: RuleContext, types: frozenset) -> float:
    h = ctx.target.hidden_size
    return math.sqrt(h) if h and _types(ctx) & types else 1.0


def _values(ctx: RuleContext) -> dict[str, dict[str, Optional[float]]]:
    """What each engine multiplies the raw embedding rows / the raw logits by, and its soft-cap (None: none)."""
    raw, v2 = ctx.draft.raw, ctx.draft.format == "zlab-v2"

    def nested(k):
        return _num(raw, f"dflash_config.{k}")

    def either(k):  # the reference's _draft_value: nested first, then the top level
        n = nested(k)
        return n if n is not None else _num(raw, k)

    cap = either("final_logit_softcapping")
    return {
        "input_embedding_scale": {
            "dflash": either("input_embedding_scale") or 1.0,
            "vllm": (nested("input_embedding_scale") or 1.0) if v2 else 1.0,
            "sglang": _module_scale(ctx, SGLANG_SCALED_EMBEDDING_TYPES),
            "mlx": _module_scale(ctx, MLX_EMBED_SCALE_TYPES) * (nested("input_embedding_scale") or 1.0),
        },
        "output_multiplier": {
            "dflash": either("output_multiplier") or 1.0,
            "vllm": (nested("output_multiplier") or 1.0) if v2 else 1.0,
            "sglang": (nested("output_multiplier") or 1.0) if v2 else 1.0,
            "mlx": nested("output_multiplier") or 1.0,
        },
        "final_logit_softcapping": {
            "dflash": cap if cap and cap > 0 else None,
            "vllm": (nested("final_logit_softcapping") or None) if v2 else None,
            "sglang": (nested("final_logit_softcapping") or None) if v2 else None,
            "mlx": cap if cap and cap > 0 else None,
        },
    }


def _same(a: Optional[float], b: Optional[float]) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-3)


def _show(value: Optional[float]) -> str:
    return "none" if value is None else f"{value:g}"


def check(ctx: RuleContext):
    if ctx.draft.is_speculators:
        return  # speculators drafts keep their own embedding and head
    values = _values(ctx)
    # A positive multiplier and tanh soft-cap keep the argmax: for v1 drafts they change sampled drafts only.
    # DFlash 2 adds its selector's edge scores to these logits, so there they change greedy drafts too.
    v2 = ctx.draft.format == "zlab-v2"
    for engine in ENGINES[1:]:
        diffs = [(k, per[engine], per["dflash"]) for k, per in values.items()
                 if not _same(per[engine], per["dflash"])]
        if not diffs:
            continue
        listed = "; ".join(f"{LABEL[k]} {_show(got)} where the dflash reference uses {_show(ref)}"
                           for k, got, ref in diffs)
        embedding = any(k == "input_embedding_scale" for k, _, _ in diffs)
        tail = "" if embedding or v2 else " (sampled drafts only: the greedy argmax is unchanged)"
        keys = [k for k, _, _ in diffs]
        yield Violation(f"{engine} drafts with {listed}{tail}",
                        [ctx.dloc(k, ctx.draft.key(k, f"dflash_config.{k}")) for k in keys],
                        backends=(engine,), severity=None if embedding or v2 else "info")


RULE = Rule(
    code="DF126",
    name="draft-scaling-engine-dependent",
    severity="warning",
    backends=ENGINES,
    check=check,
    what="Every engine multiplies the draft's block embedding and logits by what the dflash reference does for this "
    "pair: `input_embedding_scale`, `output_multiplier`, `final_logit_softcapping`, and any scale a target's "
    "embedding module applies by itself.",
    why="The engines disagree, silently. The dflash reference embeds raw rows of the target's table times "
    "`input_embedding_scale` and applies `output_multiplier` / soft-cap (each read from dflash_config, else the top "
    "level). vLLM's DFlash (v1) model embeds raw rows and never reads the three keys (its DFlash 2 model reads them "
    "from dflash_config). SGLang embeds with the target's own embedding module (Gemma 3 / 4: already x "
    "sqrt(hidden)), ignores input_embedding_scale, and applies output_multiplier / soft-cap to DFlash 2 candidates "
    "only. The MLX port multiplies by the target's `embed_scale` attribute (mlx-lm gemma4_text, gear) on top of the "
    "key, and reads input_embedding_scale / output_multiplier only from "
    "dflash_config. An engine that feeds the draft another scale than it was trained with loses most of the "
    "acceptance with no error.",
    example='target {"model_type": "gemma4", ...}, draft {"architectures": ["DFlashDraftModel"], '
    '"dflash_config": {"input_embedding_scale": 73.3}}: vLLM uses 1, MLX 73.3 x 73.3',
    fix="Serve the draft on an engine that scales the way the reference does (the message names the others), or "
    "keep the scaling keys inside dflash_config; `dflash-check smoke` shows the acceptance you get.",
    sources=(REF_DRAFT_VALUE, REF_EMBED, REF_BLOCK, REF_LOGITS, VLLM_EMBED, VLLM_SHARE_EMBED, VLLM_V2_SHARE_EMBED, VLLM_V2_EMBED,
             VLLM_V1_LOGITS, VLLM_V2_LOGITS, SGL_EMBED_MODULE, SGL_EMBED, SGL_SCALED_MODULE, SGL_LOGITS,
             SGL_V2_LOGITS, HF_SCALED_EMBED, MLX_BIND, MLX_EMBED, MLX_LOAD_DRAFT, MLX_SCALES, MLXLM_EMBED_SCALE,
             MLXLM_GEMMA3_SCALE),
)
