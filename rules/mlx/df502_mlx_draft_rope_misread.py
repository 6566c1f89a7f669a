"""DF502: the MLX draft loader reads a different RoPE than the draft config means, or one it cannot build."""

from __future__ import annotations

import math
from typing import Any

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import HF_ROPE_PARAMS, MLX_ROPE, MLX_THETA, MLXLM_ROPE, SGL_THETA

# The rope types mlx_lm.models.rope_utils.initialize_rope builds (anything else: ValueError).
MLX_ROPE_TYPES = frozenset({"default", "linear", "dynamic", "llama3", "yarn", "deepseek_yarn", "telechat3-yarn",
                            "longrope", "proportional", "mrope"})
MLX_DEFAULT_THETA = 10000.0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _rope_block(raw: dict) -> tuple[str, Any]:
    """What the loader passes to initialize_rope: rope_parameters, else rope_scaling (the first truthy one)."""
    for key in ("rope_parameters", "rope_scaling"):
        value = raw.get(key)
        if value:
            return key, value
    return "", None


def _theta(ctx: RuleContext):
    raw, d = ctx.draft.raw, ctx.draft
    key, rope = _rope_block(raw)
    top = raw.get("rope_theta")
    inner = rope.get("rope_theta") if isinstance(rope, dict) else None
    if _number(top) and _number(inner) and not math.isclose(float(top), float(inner), rel_tol=1e-6):
        yield Violation(
            f"draft rope_theta {top:g} (top level) != {key}.rope_theta {inner:g}: the MLX loader takes the top-level "
            "value, transformers (the dflash reference, vLLM, SGLang) the one inside rope_parameters",
            [ctx.dloc("rope.theta", "rope_theta"), ctx.dloc("rope.theta", f"{key}.rope_theta")],
        )
    elif d.rope.theta is not None and not _number(top) and not _number(inner):
        where = d.key("rope.theta")
        if not math.isclose(float(d.rope.theta), MLX_DEFAULT_THETA):
            yield Violation(
                f"draft RoPE base {d.rope.theta:g} is only at `{where}`, where the MLX loader does not look: it "
                f"rotates with its default {MLX_DEFAULT_THETA:g}",
                [ctx.dloc("rope.theta", where)],
            )


def check(ctx: RuleContext):
    yield from _theta(ctx)
    key, rope = _rope_block(ctx.draft.raw)
    if isinstance(rope, dict):
        kind = rope.get("type") or rope.get("rope_type", "default")
        if isinstance(kind, str) and kind not in MLX_ROPE_TYPES:
            yield Violation(
                f"draft {key} has rope type {quote(kind)}: mlx-lm's initialize_rope raises 'Unsupported RoPE type', so "
                "the MLX draft does not load",
                [ctx.dloc("rope.rope_type", f"{key}.{'type' if 'type' in rope else 'rope_type'}")],
                severity="error",
            )


RULE = Rule(
    code="DF502",
    name="mlx-draft-rope-misread",
    severity="warning",
    backends=("mlx",),
    check=check,
    what="The MLX draft loader reads the RoPE the draft config means: one RoPE base (top-level `rope_theta` and "
    "`rope_parameters.rope_theta` agree, and the base is at one of those two places) and a rope type mlx-lm builds.",
    why="dflash 0.1.0's load_draft takes the top-level `rope_theta`, else the `rope_theta` inside `rope_parameters` "
    "(or `rope_scaling`), else 10000, and hands that block to mlx-lm's initialize_rope. transformers resolves it "
    "the other way round (the value inside rope_parameters wins), so two different values mean MLX rotates with "
    "another base than the other engines; a base kept elsewhere (per-layer-type rope_parameters, rotary_emb_base) "
    "is ignored. A wrong base gives acceptance near 1 silently; a rope type mlx-lm does not know stops the load.",
    example='draft {"rope_theta": 1000000, "rope_parameters": {"rope_type": "default", "rope_theta": 10000000}}',
    fix="Keep one RoPE base, the one the draft was trained with (normally the target's), in `rope_theta` and in "
    "`rope_parameters.rope_theta` alike.",
    sources=(MLX_THETA, MLX_ROPE, MLXLM_ROPE, HF_ROPE_PARAMS, SGL_THETA),
)
