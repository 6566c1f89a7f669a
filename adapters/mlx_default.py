"""The default MLX adapter: mlx-lm models (Qwen3, Llama, Gemma 3, Qwen3.5 / Qwen3-Next hybrids, VLM wrappers, ...)."""

from __future__ import annotations

from typing import Any, Optional

import mlx.nn as nn

from dflash_compat.adapters.base import TargetAdapter
from dflash_compat.contract import MLX_REFERENCE_EMBED_PATHS, MLX_REFERENCE_LAYERS_PATHS
from dflash_compat.exceptions import RuntimeUnsupportedError
from dflash_compat.runtime.mlx_layout import get_path

__all__ = ["MLXDefaultAdapter"]


class MLXDefaultAdapter(TargetAdapter):
    """Finds the pieces where the DFlash MLX port looks (embed_tokens at embed_tokens /
    model.embed_tokens / language_model.model.embed_tokens; head at lm_head, else the tied
    embed_tokens.as_linear; layers at model.layers / language_model.layers / layers).
    `config` is mlx-lm's config dict (with generation_config's eos_token_id)."""

    name = "mlx-default"

    def __init__(self, model: nn.Module, config: Optional[dict[str, Any]] = None) -> None:
        super().__init__(model, dict(config or {}))

    @property
    def embed_tokens(self) -> Optional[nn.Module]:
        return next((m for m in (get_path(self.model, p) for p in MLX_REFERENCE_EMBED_PATHS) if m is not None), None)

    @property
    def lm_head(self) -> Optional[Any]:
        lm = get_path(self.model, "language_model") or self.model
        head = get_path(self.model, "lm_head") or get_path(lm, "lm_head")
        if head is None and self.embed_tokens is not None and hasattr(self.embed_tokens, "as_linear"):
            return self.embed_tokens.as_linear  # tied
        return head

    @property
    def decoder_layers(self) -> list:
        for path in MLX_REFERENCE_LAYERS_PATHS:
            layers = get_path(self.model, path)
            if layers is not None and len(layers) > 0:
                return list(layers)
        raise RuntimeUnsupportedError(
            f"target ({type(self.model).__name__}): no decoder layers at {' / '.join(MLX_REFERENCE_LAYERS_PATHS)}; "
            "this layout needs its own adapter (dflash-check adapt --framework mlx)"
        )
