"""DF706: the module tree shows cache layers the MLX loop cannot trim or replay."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation

from . import df504_mlx_target_cache_unsupported as df504
from ._modules import MLX_REPLAY_MODEL_TYPES, deep, model_type
from ._sources import MLX_GDN, MLX_LOOP, MLX_ROLLBACK


def check(ctx: CheckContext):
    t = ctx.target
    mt = model_type(ctx)
    if mt in MLX_REPLAY_MODEL_TYPES or any(df504.check(ctx)):
        return  # replayed by the MLX loop, or already reported from the config by DF504
    if deep(ctx, "framework") == "mlx":
        if t.rollback == "none":
            odd = sorted({c for c in (t.cache_layers or []) if c not in ("KVCache", "RotatingKVCache", "CacheList")})
            yield Violation(
                f"mlx-lm builds {', '.join(odd) or 'non-trimmable'} cache layers for {mt!r}: the MLX loop cannot "
                "trim them (only qwen3_5 GatedDeltaNet state is replayed), its assertion fails",
                [ctx.module_loc(t.layers_path or "")],
            )
        return
    bad = deep(ctx, "non_croppable_layers") or []
    if bad:
        yield Violation(
            f"{len(bad)} of the target's layers keep recurrent state ({', '.join(sorted(set(t.cache_layers or [])))}"
            "): the MLX loop rolls back only qwen3_5 GatedDeltaNet layers",
            [ctx.module_loc(f"{t.layers_path}.{bad[0]}" if t.layers_path else "")],
        )


RULE = Rule(
    code="DF706",
    name="mlx-cache-not-trimmable",
    severity="error",
    backends=("mlx",),
    needs=("modules",),
    check=check,
    what="The target's cache layers, as built (mlx-lm classes when inspected with MLX; transformers' recurrent "
    "cache layers otherwise), can be rolled back by the MLX DFlash loop: trimmable KV caches, or qwen3_5's "
    "GatedDeltaNet state by replay. Complements DF504, which judges from the model type.",
    why="After each verify step the MLX loop trims the rejected tokens from every cache layer; when some layer "
    "cannot be trimmed it replays GatedDeltaNet layers instead and asserts that every non-trimmable cache is one, "
    "so any other state cache stops generation with an AssertionError.",
    example="a hybrid target whose model_type is not in the known hybrid lists, with LinearAttentionLayer caches",
    fix="Serve this target with vLLM or SGLang (which roll back recurrent state), or use a pure-attention target.",
    sources=(MLX_LOOP, MLX_ROLLBACK, MLX_GDN),
)
