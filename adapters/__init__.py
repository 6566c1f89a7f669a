"""Target adapters: where a target model keeps its embedding, head and layers (interface in `base.py`).

Adapters only map; the runtimes run them (`dflash_compat.runtime.torch_target` / `mlx_target`).
Nothing here imports torch or mlx: adapter classes are imported when selected (registry.py).
"""

from __future__ import annotations

from dflash_compat.adapters.base import TargetAdapter
from dflash_compat.adapters.loading import mlx_adapter as mlx_adapter_for
from dflash_compat.adapters.loading import torch_adapter as torch_adapter_for
from dflash_compat.adapters.registry import MLX_ADAPTERS, TORCH_ADAPTERS

__all__ = ["TargetAdapter", "TORCH_ADAPTERS", "MLX_ADAPTERS", "torch_adapter_for", "mlx_adapter_for"]
