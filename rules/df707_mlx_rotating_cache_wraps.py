"""DF707: the MLX target builds RotatingKVCache layers, which stop trimming once the window wraps."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation

from . import df504_mlx_target_cache_unsupported as df504
from ._modules import deep


def check(ctx: CheckContext):
    t = ctx.target
    # Only from the real mlx-lm tree (from transformers facts DF504 judges by model type), and only what
    # DF504 has not already reported from the config.
    if deep(ctx, "framework") != "mlx" or "RotatingKVCache" not in (t.cache_layers or []) or any(df504.check(ctx)):
        return
    n = sum(1 for c in t.cache_layers if c == "RotatingKVCache")
    yield Violation(
        f"{n} of the target's mlx-lm cache layers are RotatingKVCache: once the window wraps, trimming rejected "
        "draft tokens silently stops and the output is wrong",
        [ctx.module_loc(t.layers_path or "")],
    )


RULE = Rule(
    code="DF707",
    name="mlx-rotating-cache-wraps",
    severity="error",
    backends=("mlx",),
    needs=("modules",),
    check=check,
    what="The mlx-lm target's cache (as built by make_prompt_cache on the MLX tree) has no RotatingKVCache layers.",
    why="A rotating cache overwrites its oldest entries in place; after the window has wrapped the MLX loop can "
    "no longer remove the rejected tokens, and verification continues from a corrupted cache without an error.",
    example="an mlx-community Gemma 3 or gpt-oss checkpoint (sliding-window layers)",
    fix="Keep prompt plus output shorter than the sliding window on MLX, or serve the target with vLLM / SGLang.",
)
