"""Built-in adapters: model_type -> adapter class, one explicit table per framework (no globbing); the
layouts they follow are one table too (layouts.py).

A model_type that is not listed gets the framework's default adapter (standard `model.*` causal
LMs and VLM wrappers). Entries are "module:Class" strings, imported only when selected, so this
module never imports torch or mlx.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

from dflash_compat.adapters.layouts import MLX_LAYOUTS, TORCH_LAYOUTS

__all__ = [
    "TORCH_DEFAULT",
    "MLX_DEFAULT",
    "TORCH_ADAPTERS",
    "MLX_ADAPTERS",
    "TORCH_NAMES",
    "MLX_NAMES",
    "ROLE_PROPERTIES",
    "adapter_ref",
    "named_adapter_ref",
    "load_class",
    "adapter_names",
    "layout_paths",
]

_P = "dflash_compat.adapters."
TORCH_DEFAULT = _P + "torch_default:TorchDefaultAdapter"
MLX_DEFAULT = _P + "mlx_default:MLXDefaultAdapter"

_TL, _ML = _P + "torch_layouts:", _P + "mlx_layouts:"


def _torch(layout: str) -> str:
    return _TL + TORCH_LAYOUTS[layout].cls


def _mlx(layout: str) -> str:
    return _ML + MLX_LAYOUTS[layout].cls


# model_type (config.json) -> built-in PyTorch adapter (a layout of layouts.TORCH_LAYOUTS). Layouts verified
# against transformers 5.24.
TORCH_ADAPTERS: dict[str, str] = {
    "gpt2": _torch("gpt2"), "gptj": _torch("gpt2"), "gpt_neo": _torch("gpt2"), "codegen": _torch("gpt2"),
    "gpt_bigcode": _torch("gpt2"),
    "gpt_neox": _torch("gpt-neox"),
    "opt": _torch("opt"),
    "falcon": _torch("falcon"), "bloom": _torch("falcon"),
    "phi": _torch("phi"),
}

# model_type (mlx-lm's ModelArgs.model_type) -> built-in MLX adapter (a layout of layouts.MLX_LAYOUTS), for the
# mlx-lm layouts whose embedding or head is not where the DFlash MLX loader looks. Verified against mlx-lm 0.32.
MLX_ADAPTERS: dict[str, str] = {
    "gpt2": _mlx("gpt2"), "gptj": _mlx("gpt2"),
    "gpt_neox": _mlx("gpt-neox"),
    "gpt_bigcode": _mlx("gpt-bigcode"), "qwen": _mlx("gpt-bigcode"), "exaone": _mlx("gpt-bigcode"),
    "dbrx": _mlx("dbrx"),
    "internlm2": _mlx("internlm2"),
    "openelm": _mlx("openelm"),
    "plamo": _mlx("plamo"),
}

# --adapter NAME -> adapter. Model types work as names too (`--adapter bloom`).
TORCH_NAMES: dict[str, str] = {
    "torch-default": TORCH_DEFAULT,
    "gpt2": TORCH_ADAPTERS["gpt2"],
    "gpt-neox": TORCH_ADAPTERS["gpt_neox"],
    "opt": TORCH_ADAPTERS["opt"],
    "falcon": TORCH_ADAPTERS["falcon"],
    "phi": TORCH_ADAPTERS["phi"],
}
MLX_NAMES: dict[str, str] = {
    "mlx-default": MLX_DEFAULT,
    "gpt2": MLX_ADAPTERS["gpt2"],
    "gpt-neox": MLX_ADAPTERS["gpt_neox"],
    "gpt-bigcode": MLX_ADAPTERS["gpt_bigcode"],
    "dbrx": MLX_ADAPTERS["dbrx"],
    "internlm2": MLX_ADAPTERS["internlm2"],
    "openelm": MLX_ADAPTERS["openelm"],
    "plamo": MLX_ADAPTERS["plamo"],
}

_TABLES = {"torch": (TORCH_ADAPTERS, TORCH_NAMES, TORCH_DEFAULT), "mlx": (MLX_ADAPTERS, MLX_NAMES, MLX_DEFAULT)}

# Shim role -> the adapter property that holds it (see adapters/shim.py ROLES).
ROLE_PROPERTIES: dict[str, str] = {
    "embed": "embed_tokens",
    "embed_proj": "project_in",
    "layers": "decoder_layers",
    "norm": "norm",
    "head_proj": "project_out",
    "lm_head": "lm_head",
}


def adapter_ref(model_type: Optional[str], framework: str = "torch") -> Optional[str]:
    """The built-in adapter listed for `model_type`, or None (the default adapter applies)."""
    table = _TABLES[framework][0]
    return table.get(model_type) if isinstance(model_type, str) else None


def named_adapter_ref(name: str, framework: str = "torch") -> Optional[str]:
    """`--adapter NAME`: an adapter name (gpt2, opt, torch-default, ...) or a listed model_type."""
    table, names, _ = _TABLES[framework]
    return names.get(name) or table.get(name)


def adapter_names(framework: str = "torch") -> list[str]:
    table, names, _ = _TABLES[framework]
    return sorted(set(names) | set(table))


def load_class(ref: str) -> Any:
    module, _, cls = ref.partition(":")
    return getattr(importlib.import_module(module), cls)


class _NotAPath(Exception):
    """An adapter property did more than follow attributes (e.g. called get_input_embeddings())."""


class _Recorder:
    """Stands in for a model and records the attribute path an adapter property follows."""

    def __init__(self, path: str = "") -> None:
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name: str) -> "_Recorder":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Recorder(f"{self._path}.{name}" if self._path else name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise _NotAPath(self._path)


def layout_paths(adapter_cls: type, attribute: str = "model") -> dict[str, str]:
    """{shim role: dotted path} that a built-in adapter's properties follow, read by running them
    on a recording stand-in for the model (no model is built, torch is not needed). Properties
    that do more than follow attributes (the default adapter's lookups) are left out."""
    stub = object.__new__(adapter_cls)
    object.__setattr__(stub, attribute, _Recorder())
    out: dict[str, str] = {}
    for role, prop in ROLE_PROPERTIES.items():
        fget = getattr(getattr(adapter_cls, prop, None), "fget", None)
        if fget is None:
            continue
        try:
            value = fget(stub)
        except (_NotAPath, AttributeError, TypeError):
            continue
        if isinstance(value, _Recorder) and object.__getattribute__(value, "_path"):
            out[role] = object.__getattribute__(value, "_path")
    return out

