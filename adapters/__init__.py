"""Target adapters: where a target model keeps its embedding, head and layers (interface in `base.py`).

Adapters only map; the runtimes run them (`dflash_compat.runtime.torch_target` / `mlx_target`).
Nothing here imports torch or mlx: adapter classes are imported when selected (registry.py).
"""

from __future__ import annotations

from .base import TargetAdapter
from .loading import mlx_adapter as mlx_adapter_for
from .loading import torch_adapter as torch_adapter_for
from .registry import MLX_ADAPTERS, TORCH_ADAPTERS

<<<<<<< HEAD
from .base import ROLLBACK_KINDS, RollbackKind, TargetAdapter, TargetOutput

__all__ = ["TargetAdapter", "TargetOutput", "RollbackKind", "ROLLBACK_KINDS", "TORCH_ADAPTERS", "torch_adapter_for"]

# model_type -> "module:Class" of a built-in PyTorch adapter for a layout the default adapter cannot
# read. Modules are imported only when selected (no torch at import time). The table: registry.py.
from .registry import TORCH_ADAPTERS  # noqa: E402

_TORCH_DEFAULT = "dflash_compat.adapters.torch_default:TorchDefaultAdapter"


def torch_adapter_for(model: Any, adapter: Optional[str] = None) -> TargetAdapter:
    """The adapter for a loaded PyTorch model: a built-in one chosen by `config.model_type`,
    else the default adapter (standard transformers causal LMs and VLM wrappers).
    `adapter` (--adapter FILE_OR_NAME): a shim file from `dflash-check adapt`, or a built-in name."""
    if adapter is not None:
        from .loading import torch_adapter

        return torch_adapter(model, adapter)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    module_name, _, cls_name = TORCH_ADAPTERS.get(model_type, _TORCH_DEFAULT).partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(model)
=======
__all__ = ["TargetAdapter", "TORCH_ADAPTERS", "MLX_ADAPTERS", "torch_adapter_for", "mlx_adapter_for"]
>>>>>>> runtime
