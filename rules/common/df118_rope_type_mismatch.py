"""DF118: the draft's RoPE scaling (type and factor) differs from the target's."""

from __future__ import annotations

import math

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import HF_QWEN3_ROPE, MLX_ROPE, MLXLM_ROPE, SGL_ROPE, SGL_ROPE_OLD, VLLM_ROPE_DIM

VLLM_DRAFT_ROPE = EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "222-227",
                               "draft rotary embedding from the draft's rope_parameters")


def _rope_type(r) -> str:
    # mrope is the plain rotation applied per section; DF125 speaks about it.
    return "default" if r.rope_type in (None, "default", "mrope") else r.rope_type


def check(ctx: RuleContext):
    t, d = ctx.target.rope, ctx.draft.rope
    tv, dv = _rope_type(t), _rope_type(d)
    if tv != dv:
        field = "rope.rope_type"
        yield Violation(
            f"draft RoPE rope_type {quote(dv)} != target {quote(tv)}",
            [ctx.dloc(field, ctx.draft.key(field, "rope_scaling")),
             ctx.tloc(field, ctx.target.key(field, "rope_scaling"))],
        )
    elif tv != "default" and t.factor is not None and d.factor is not None:
        if not math.isclose(float(t.factor), float(d.factor)):
            yield Violation(
                f"draft RoPE scaling factor {quote(d.factor)} != target {quote(t.factor)}",
                [ctx.dloc("rope.factor"), ctx.tloc("rope.factor")],
            )


RULE = Rule(
    code="DF118",
    name="rope-type-mismatch",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft's RoPE scaling matches the target's: `rope_type` (default / linear / yarn / llama3 ...) and its "
    "scaling factor. (The rotation layout and rotary width are the draft's own business: DF127.)",
    why="Every engine builds the draft's rotary embedding from the draft's own `rope_scaling` / `rope_parameters` "
    "(transformers' Qwen3RotaryEmbedding in the reference, mlx-lm's initialize_rope, vLLM's and SGLang's get_rope). "
    "Drafts are trained at the target's positions with its RoPE settings; a config that drops the scaling rotates "
    "long-context positions differently from training, which costs acceptance without any error.",
    example='target {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, draft {"rope_scaling": null}',
    fix="Copy the RoPE settings the draft was trained with (normally the target's) into the draft config.",
    sources=(HF_QWEN3_ROPE, MLX_ROPE, MLXLM_ROPE, VLLM_DRAFT_ROPE, VLLM_ROPE_DIM, SGL_ROPE, SGL_ROPE_OLD),
)
