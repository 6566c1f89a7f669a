"""Built-in adapters: model_type -> adapter class, one explicit table per framework (no globbing).

A model_type that is not listed gets the framework's default adapter (standard `model.*` causal
LMs and VLM wrappers). Entries are "module:Class" strings, imported only when selected, so this
module never imports torch or mlx.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

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

# model_type (config.json) -> built-in PyTorch adapter. Layouts verified against transformers 5.24.
TORCH_ADAPTERS: dict[str, str] = {
    # transformer.wte / transformer.h / transformer.ln_f, lm_head
    "gpt2": _P + "torch_gpt2:GPT2Adapter",
    "gptj": _P + "torch_gpt2:GPT2Adapter",
    "gpt_neo": _P + "torch_gpt2:GPT2Adapter",
    "codegen": _P + "torch_gpt2:GPT2Adapter",
    "gpt_bigcode": _P + "torch_gpt2:GPT2Adapter",
    # gpt_neox.embed_in / gpt_neox.layers / gpt_neox.final_layer_norm, lm_head (embed_out in 4.x)
    "gpt_neox": _P + "torch_gpt_neox:GPTNeoXAdapter",
    # model.decoder.embed_tokens (+ project_in) / model.decoder.layers, (project_out +) lm_head
    "opt": _P + "torch_opt:OPTAdapter",
    # transformer.word_embeddings / transformer.h / transformer.ln_f, lm_head
    "falcon": _P + "torch_falcon:FalconAdapter",
    "bloom": _P + "torch_falcon:FalconAdapter",
    # model.embed_tokens / model.layers / model.final_layernorm, lm_head (with bias)
    "phi": _P + "torch_phi:PhiAdapter",
}

# model_type (mlx-lm's ModelArgs.model_type) -> built-in MLX adapter, for the mlx-lm layouts whose
# embedding or head is not where the DFlash MLX loader looks. Verified against mlx-lm 0.32.
MLX_ADAPTERS: dict[str, str] = {
    # model.wte / model.h / model.ln_f; head tied to wte (gpt2) or lm_head (gptj)
    "gpt2": _P + "mlx_gpt2:MLXGPT2Adapter",
    "gptj": _P + "mlx_gpt2:MLXGPT2Adapter",
    # model.embed_in / model.h / model.final_layer_norm; head model.embed_out (inside the decoder)
    "gpt_neox": _P + "mlx_gpt_neox:MLXGPTNeoXAdapter",
    # transformer.wte / transformer.h / transformer.ln_f; lm_head or tied
    "gpt_bigcode": _P + "mlx_gpt_bigcode:MLXGPTBigCodeAdapter",
    "qwen": _P + "mlx_gpt_bigcode:MLXGPTBigCodeAdapter",
    "exaone": _P + "mlx_gpt_bigcode:MLXGPTBigCodeAdapter",
    # transformer.wte / transformer.blocks / transformer.norm_f; lm_head
    "dbrx": _P + "mlx_dbrx:MLXDBRXAdapter",
    # model.tok_embeddings / model.layers / model.norm; head output or tied
    "internlm2": _P + "mlx_internlm2:MLXInternLM2Adapter",
    # transformer.token_embeddings / transformer.layers / transformer.norm; lm_head or tied
    "openelm": _P + "mlx_openelm:MLXOpenELMAdapter",
    # model.embed_tokens / model.layers.layers (a module holding the list) / model.norm; lm_head
    "plamo": _P + "mlx_plamo:MLXPlamoAdapter",
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

