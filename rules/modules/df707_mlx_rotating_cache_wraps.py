"""DF707: the MLX target builds RotatingKVCache layers, which naive trimming cannot roll back once wrapped."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import mlx_cache_violations
from dflash_compat.rules._sources import MLX_ROLLBACK, MLX_TRIM, MLXLM_ROTATING, MLXLM_TRIM


def check(ctx: RuleContext):
    m = ctx.tree
    kinds = list(m.cache.layers or []) if m.cache else []
    # Only from the real mlx-lm tree (from transformers facts DF504 judges by model type), and only what
    # DF504 has not already reported from the config.
    if "RotatingKVCache" not in kinds or any(mlx_cache_violations(ctx)):
        return
    n = sum(1 for c in kinds if c == "RotatingKVCache")
    yield Violation(
        f"{n} of the target's mlx-lm cache layers are RotatingKVCache: MLX DFlash code that trims through "
        "mlx-lm's trim_prompt_cache stops removing rejected draft tokens once the window wraps, and the output "
        "is wrong without an error (dflash 0.1.0 and dflash-compat reorder the ring buffer and stay exact)",
        [ctx.module_loc(m.paths.layers if m.paths and m.paths.layers else "")],
    )


RULE = Rule(
    code="DF707",
    name="mlx-rotating-cache-wraps",
    severity="warning",
    backends=("mlx",),
    needs=("mlx-modules",),
    check=check,
    what="The mlx-lm target's cache (as built by make_prompt_cache on the MLX tree) has no RotatingKVCache layers.",
    why="A rotating cache overwrites its oldest entries in place; after the window has wrapped, mlx-lm reports "
    "it as not trimmable and trim_prompt_cache does nothing, so a loop that trims that way keeps the rejected "
    "tokens and verifies from a corrupted cache without an error. dflash 0.1.0 and our runtime put the ring "
    "buffer back in order before cutting it and are exact (tests/test_mlx_runtime.py pins this).",
    example="an mlx-community Gemma 3 or gpt-oss checkpoint (sliding-window layers)",
    fix="Use dflash >= 0.1.0 or `dflash-check smoke --backend mlx` with a prompt longer than the window; with "
    "other MLX ports keep prompt plus output shorter than the window.",
    sources=(MLX_TRIM, MLX_ROLLBACK, MLXLM_ROTATING, MLXLM_TRIM),
)
