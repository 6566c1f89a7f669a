"""DF504: mlx-lm builds a target cache the MLX DFlash loop cannot roll back."""

from __future__ import annotations

from dflash_compat.checker.engine import CheckContext, EngineSource, Rule, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import model_type_loc
from dflash_compat.rules._modules import mlx_replayed
from dflash_compat.rules._sources import MLX_GDN, MLX_LOOP, MLX_ROLLBACK, MLX_TRIM, MLXLM_ROTATING, MLXLM_TRIM


def check(ctx: CheckContext):
    t = ctx.target
    data = ctx.facts("mlx")
    types = {x for x in (t.model_type, t.text_model_type) if x}
    shown = t.text_model_type or t.model_type
    loc = [model_type_loc(ctx)]
    if t.is_hybrid and not mlx_replayed(ctx, types):
        yield Violation(
            f"target {quote(shown)} has recurrent / state-space layers: MLX rolls back only qwen3_5 GatedDeltaNet "
            "layers, any other non-trimmable cache fails an assertion",
            loc,
        )
    sliding_layers = isinstance(t.layer_types, list) and "sliding_attention" in t.layer_types
    rotating = (types & set(data["rotating_kv_cache_model_types"]) and t.uses_sliding_window) or (
        types & set(data["rotating_when_layer_types_sliding"]) and sliding_layers
    )
    # mlx-lm builds the class of the top-level model_type; a wrapper without make_cache (mistral3, llava)
    # gets plain KVCaches whatever its text model would build
    built = data["cache_classes"].get(t.model_type)
    if rotating and (built is None or "RotatingKVCache" in built):
        window = f" of {t.sliding_window} tokens" if t.sliding_window else ""
        yield Violation(
            f"mlx-lm gives {quote(shown)} a RotatingKVCache for its sliding-window layers{window}: MLX DFlash code "
            "that trims through mlx-lm's trim_prompt_cache stops trimming once the window wraps and corrupts "
            "the output silently (dflash 0.1.0 and dflash-compat reorder the ring buffer and stay exact)",
            [*loc, ctx.tloc("sliding_window")] if t.sliding_window else loc,
            fix="Use dflash >= 0.1.0 or `dflash-check smoke --backend mlx` (both roll rotating caches back "
            "exactly), and smoke-test with a prompt longer than the window; avoid older MLX ports.",
            severity="warning",
        )


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
