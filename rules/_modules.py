"""What the module-tree rules share: the fixed paths each engine reaches, the adapter hint."""

from __future__ import annotations

from dflash_compat.checker import RuleContext, Violation

# Where the MLX port looks (dflash.model_mlx bind / _get_layers), in order: one table, the MLX
# inspector's (probe.mlx_tree imports no mlx at module level).
from dflash_compat.contract import MLX_REFERENCE_EMBED_PATHS as MLX_EMBED_PATHS
from dflash_compat.contract import MLX_REFERENCE_HEAD_PATHS as MLX_HEAD_PATHS
from dflash_compat.contract import MLX_REFERENCE_LAYERS_PATHS as MLX_LAYER_PATHS
from dflash_compat.quoting import quote
from dflash_compat.rules._common import model_type_loc

__all__ = [
    "ADAPT_HINT",
    "MLX_EMBED_PATHS",
    "MLX_HEAD_PATHS",
    "MLX_LAYER_PATHS",
    "mlx_cache_violations",
    "mlx_replayed",
    "model_type",
    "vllm_reaches",
]

ADAPT_HINT = "`dflash-check adapt TARGET -o adapter.py` generates a shim that exposes them where the runtime looks"



def mlx_replayed(ctx: RuleContext, model_types) -> bool:
    """Whether one of `model_types` is an mlx-lm model whose GatedDeltaNet state the MLX reference rolls back
    by replaying the accepted prefix, at the selected mlx-lm release (the engine facts' replay_model_types,
    shared with DF504; UnknownFact where that release's list could not be read)."""
    return bool(set(model_types) & set(ctx.engine("mlx-lm").facts["replay_model_types"]))


def model_type(ctx: RuleContext) -> str:
    return str(ctx.target.text_model_type or ctx.target.model_type or "")


def _lm_relative(path: str) -> str:
    """A VLM wrapper's path as seen from its language model (HF `model.language_model.X` -> `model.X`)."""
    for pre, repl in (("model.language_model.", "model."), ("language_model.", "")):
        if path.startswith(pre):
            return repl + path[len(pre):]
    return path


def vllm_reaches(kind: str, path: str) -> bool:
    """vLLM's DFlash proposer shares the target's `model.embed_tokens` (or `.embedding`) and `lm_head`."""
    rel = _lm_relative(path)
    if kind == "embed":
        return rel in ("model.embed_tokens", "model.embedding", "embedding")
    return rel == "lm_head"


def mlx_cache_violations(ctx: RuleContext):
    """DF504's verdict from the config (DF706 and DF707 stay quiet where it speaks)."""
    t = ctx.target
    data = ctx.engine("mlx-lm").facts
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
