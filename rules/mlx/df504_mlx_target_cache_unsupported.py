"""DF504: mlx-lm builds a target cache the MLX DFlash loop cannot roll back."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext
from dflash_compat.rules._modules import mlx_cache_violations
from dflash_compat.rules._sources import MLX_GDN, MLX_LOOP, MLX_ROLLBACK, MLX_TRIM, MLXLM_ROTATING, MLXLM_TRIM


def check(ctx: RuleContext):
    yield from mlx_cache_violations(ctx)


RULE = Rule(
    code="DF504",
    name="mlx-target-cache-unsupported",
    severity="error",
    backends=("mlx",),
    check=check,
    what="The target's mlx-lm cache can be rolled back: plain KVCache layers, or qwen3_5 GatedDeltaNet layers "
    "(replayed). Judged from `model_type`, `layer_types` and `sliding_window`; the model-type lists are data "
    "in dflash_compat/engines/data/engines/mlx-lm.json (per mlx-lm release).",
    why="After each verify step the MLX loop trims rejected tokens from the target cache. Other recurrent caches "
    "(qwen3_next, nemotron_h, falcon_h1, lfm2, jamba, mamba, ...) trip its assertion (an error). RotatingKVCache "
    "layers (gpt_oss, gemma3, cohere2, ministral, ...) are a warning: code that trims them through mlx-lm's "
    "trim_prompt_cache stops trimming once the window wraps and corrupts the output silently; dflash 0.1.0 and "
    "our MLX runtime reorder the ring buffer first and stay exact (pinned by tests/test_mlx_runtime.py).",
    example='target {"model_type": "gpt_oss", "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"]}',
    fix="Recurrent layers: serve this target with vLLM or SGLang. Rotating caches: use dflash >= 0.1.0 or "
    "`dflash-check smoke --backend mlx` (both roll them back exactly) and smoke-test past the window.",
    sources=(MLX_LOOP, MLX_ROLLBACK, MLX_GDN, MLX_TRIM, MLXLM_TRIM, MLXLM_ROTATING,
             EngineSource("mlx-lm", "mlx_lm/models/cache.py", "31-40", "make_prompt_cache: the model's make_cache, "
                          "else a plain KVCache per layer (mistral3.py:23-39 has no make_cache)")),
)
