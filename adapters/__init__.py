"""Target adapters: how a runtime reaches a target model (interface in `base.py`)."""

from __future__ import annotations

import importlib
from typing import Any, Optional

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
