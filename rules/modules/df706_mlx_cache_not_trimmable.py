"""DF706: the module tree shows cache layers the MLX loop cannot trim or replay."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules._modules import mlx_cache_violations, mlx_replayed, model_type
from dflash_compat.rules._sources import MLX_GDN, MLX_LOOP, MLX_ROLLBACK


def check(ctx: RuleContext):
    m = ctx.tree
    mt = model_type(ctx)
    if mlx_replayed(ctx, [mt]) or any(mlx_cache_violations(ctx)):
        return  # replayed by the MLX loop, or already reported from the config by DF504
    layers = m.paths.layers if m.paths else None
    kinds = list(m.cache.layers or []) if m.cache else []
    if m.framework == "mlx":
        if m.cache is not None and m.cache.rollback == "none":
            odd = sorted({c for c in kinds if c not in ("KVCache", "RotatingKVCache", "CacheList")})
            yield Violation(
                f"mlx-lm builds {quote_items(odd, raw=True) or 'non-trimmable'} cache layers for {quote(mt)}: the MLX loop cannot "
                "trim them (only qwen3_5 GatedDeltaNet state is replayed), its assertion fails",
                [ctx.module_loc(layers or "")],
            )
        return
    bad = list(m.cache.non_croppable) if m.cache else []
    if bad:
        yield Violation(
            f"{len(bad)} of the target's layers keep recurrent state ({', '.join(sorted(set(kinds)))}"
            "): the MLX loop rolls back only qwen3_5 GatedDeltaNet layers",
            [ctx.module_loc(f"{layers}.{bad[0]}" if layers else "")],
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
