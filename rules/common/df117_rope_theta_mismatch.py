"""DF117: the draft's RoPE base differs from the target's."""

from __future__ import annotations

import math

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_QWEN3_ROPE, HF_ROPE_PARAMS, MLX_THETA, SGL_THETA

VLLM_ROPE_BASE = EngineSource("vllm", "vllm/model_executor/layers/rotary_embedding/__init__.py", "64",
                              "base = rope_parameters rope_theta (10000 when absent)")

# The RoPE base a draft config without rope_theta gets: PreTrainedConfig.default_theta in transformers (which
# vLLM's and SGLang's configs come from), dflash.model_mlx's fallback on MLX.
DRAFT_DEFAULT_THETA = 10_000.0


def check(ctx: RuleContext):
    t, d = ctx.target.rope.theta, ctx.draft.rope.theta
    if t is None:
        return
    stated = d is not None
    theta = d if stated else DRAFT_DEFAULT_THETA
    if math.isclose(float(theta), float(t), rel_tol=1e-6):
        return
    what = f"draft rope_theta {theta:g}" if stated else f"draft sets no rope_theta (default {theta:g})"
    yield Violation(
        f"{what} != target rope_theta {t:g}: the draft's positions rotate differently from what it was trained "
        "on, and acceptance drops to about 1 without any error",
        [ctx.dloc("rope.theta", None if stated else "rope_theta"), ctx.tloc("rope.theta")],
    )


RULE = Rule(
    code="DF117",
    name="rope-theta-mismatch",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft's `rope_theta` (top level or `rope_parameters.rope_theta`) equals the target's; a draft "
    "without one gets the Qwen3 default 10000.",
    why="Drafts inherit the target's RoPE base at training time; a config that says otherwise (a stale copy, a "
    "draft for another model) rotates queries and keys wrongly and acceptance falls to about 1 silently.",
    example='target {"rope_theta": 1000000}, draft {"rope_theta": 10000}',
    fix="Set the draft's `rope_theta` to the value it was trained with, normally the target's.",
    sources=(HF_ROPE_PARAMS, HF_QWEN3_ROPE, MLX_THETA, SGL_THETA, VLLM_ROPE_BASE),
)
