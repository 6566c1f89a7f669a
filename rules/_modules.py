"""What the module-tree rules share: the fixed paths each engine reaches, the adapter hint."""

from __future__ import annotations

from dflash_compat.checker.engine import CheckContext

# Where the MLX port looks (dflash.model_mlx bind / _get_layers), in order: one table, the MLX
# inspector's (probe.mlx_tree imports no mlx at module level).
from dflash_compat.contract import MLX_REFERENCE_EMBED_PATHS as MLX_EMBED_PATHS
from dflash_compat.contract import MLX_REFERENCE_HEAD_PATHS as MLX_HEAD_PATHS
from dflash_compat.contract import MLX_REFERENCE_LAYERS_PATHS as MLX_LAYER_PATHS

__all__ = [
    "ADAPT_HINT",
    "MLX_EMBED_PATHS",
    "MLX_HEAD_PATHS",
    "MLX_LAYER_PATHS",
    "mlx_replayed",
    "model_type",
    "vllm_reaches",
]

ADAPT_HINT = "`dflash-check adapt TARGET -o adapter.py` generates a shim that exposes them where the runtime looks"



def mlx_replayed(ctx: CheckContext, model_types) -> bool:
    """Whether one of `model_types` is an mlx-lm model whose GatedDeltaNet state the MLX reference rolls back
    by replaying the accepted prefix, at the selected mlx-lm release (the engine facts' replay_model_types,
    shared with DF504; UnknownFact where that release's list could not be read)."""
    return bool(set(model_types) & set(ctx.facts("mlx")["replay_model_types"]))


def model_type(ctx: CheckContext) -> str:
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
