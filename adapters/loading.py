"""`--adapter FILE_OR_NAME`: pick a built-in adapter by name, or import a generated shim file.

A FILE is a shim written by `dflash-check adapt`; it is imported (that is, run) only because the
user passed it on the command line. A NAME is a built-in adapter (`gpt2`, `opt`, ...) or a
model_type listed in registry.py. Nothing here imports torch or mlx at module level.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Callable, Optional

from dflash_compat.adapters import registry
from dflash_compat.exceptions import InputError, error_line
from dflash_compat.files.safe_read import read_bytes

__all__ = ["is_shim_file", "load_shim_file", "torch_adapter", "mlx_adapter", "builtin_shim", "check_wrapper"]

_MAX_SHIM_BYTES = 1_000_000  # a generated shim is a few KB


def is_shim_file(adapter: str) -> bool:
    """A path (ends in .py or holds a path separator) rather than a built-in adapter name."""
    return adapter.endswith(".py") or "/" in adapter or "\\" in adapter


def load_shim_file(path: str, framework: str = "torch") -> types.ModuleType:
    """Import a generated shim from `path` (never from sys.path) and check it is one."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"--adapter {path}: no such file (generate one with `dflash-check adapt TARGET -o {path}`)")
    if p.suffix != ".py":
        raise InputError(f"--adapter {path}: expected a Python file written by `dflash-check adapt`")
    resolved = p.resolve()
    name = "dflash_adapter_" + hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise InputError(f"--adapter {path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    # Compiled and run from its source here, never through the import system's loader: that would
    # write __pycache__/ beside the file (into a model folder, if the shim lives there) unless
    # PYTHONDONTWRITEBYTECODE happens to be set. A bounded read: a shim is a few KB.
    source = read_bytes(resolved, _MAX_SHIM_BYTES, what=f"--adapter {path}")
    try:
        exec(compile(source, str(resolved), "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    except Exception as exc:  # noqa: BLE001 - the user's file: any failure is their error, in one line
        raise InputError(f"--adapter {path}: importing it failed ({error_line(exc)})") from None
    if not callable(getattr(module, "wrap", None)) or not isinstance(getattr(module, "PATHS", None), dict):
        raise InputError(f"--adapter {path}: not an adapter shim (no wrap() / PATHS); write one with `dflash-check adapt`")
    shim_fw = getattr(module, "FRAMEWORK", "torch")
    if shim_fw != framework:
        raise InputError(f"--adapter {path}: a {shim_fw} shim, but the {framework} runtime was chosen")
    sys.modules.setdefault(name, module)
    return module


def _named_ref(name: str, framework: str) -> str:
    ref = registry.named_adapter_ref(name, framework)
    if ref is None:
        raise InputError(
            f"--adapter {name}: no built-in {framework} adapter by that name "
            f"(known: {', '.join(registry.adapter_names(framework))}; or pass a shim file from `dflash-check adapt`)"
        )
    return ref


def torch_adapter(model: Any, adapter: Optional[str] = None) -> Any:
    """The TargetAdapter for a loaded PyTorch model: the table's choice by model_type when
    `adapter` is None, a built-in by name, or the default adapter over a shim's wrapped model."""
    if adapter is None:
        ref = registry.adapter_ref(getattr(getattr(model, "config", None), "model_type", None)) or registry.TORCH_DEFAULT
        return registry.load_class(ref)(model)
    if is_shim_file(adapter):
        shim = load_shim_file(adapter, "torch")
        try:
            wrapped = shim.wrap(model)
        except Exception as exc:  # noqa: BLE001 - e.g. a shim generated for another layout
            raise InputError(f"--adapter {adapter}: wrap() failed ({error_line(exc)})") from None
        from dflash_compat.adapters.torch_default import TorchDefaultAdapter

        out = TorchDefaultAdapter(wrapped)
        out.name = f"shim:{Path(adapter).name}"
        return out
    return registry.load_class(_named_ref(adapter, "torch"))(model)


def mlx_adapter(model: Any, config: Optional[dict[str, Any]] = None, adapter: Optional[str] = None) -> Any:
    """The TargetAdapter for a loaded mlx-lm model (same choices as torch_adapter)."""
    if adapter is None:
        model_type = (config or {}).get("model_type") or getattr(model, "model_type", None)
        ref = registry.adapter_ref(model_type, "mlx") or registry.MLX_DEFAULT
        return registry.load_class(ref)(model, config)
    if is_shim_file(adapter):
        shim = load_shim_file(adapter, "mlx")
        try:
            wrapped = shim.wrap(model)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"--adapter {adapter}: wrap() failed ({error_line(exc)})") from None
        from dflash_compat.adapters.mlx_default import MLXDefaultAdapter

        out = MLXDefaultAdapter(wrapped, config)
        out.name = f"shim:{Path(adapter).name}"
        return out
    return registry.load_class(_named_ref(adapter, "mlx"))(model, config)


def builtin_shim(name: str, framework: str = "torch") -> Optional[types.ModuleType]:
    """The shim module for a built-in adapter's layout, rendered from its paths and run in memory
    (our own table, no user input in it); None for the default adapters (nothing to wrap)."""
    from dflash_compat.adapters.shim import ShimPlan, render_shim

    ref = _named_ref(name, framework)
    if ref in (registry.TORCH_DEFAULT, registry.MLX_DEFAULT):
        return None
    paths = registry.layout_paths(registry.load_class(ref))
    source = render_shim(ShimPlan(framework, paths, source=f"built-in adapter {name}"))
    module = types.ModuleType(f"dflash_builtin_shim_{name.replace('-', '_')}")
    exec(compile(source, f"<built-in adapter {name}>", "exec"), module.__dict__)  # noqa: S102 - our own template
    return module


def check_wrapper(adapter: Optional[str], framework: str = "torch") -> Optional[Callable[[Any], Any]]:
    """What the deep inspection applies to the built (weightless) model so that the module rules
    see the adapted model: the shim's wrap(), a built-in layout's shim, or None (no change).
    A wrap() that fails becomes one InputError line."""
    if adapter is None:
        return None
    module = load_shim_file(adapter, framework) if is_shim_file(adapter) else builtin_shim(adapter, framework)
    if module is None:
        return None

    def wrap(model: Any) -> Any:
        try:
            return module.wrap(model)
        except Exception as exc:  # noqa: BLE001 - e.g. a shim generated for another layout
            raise InputError(f"--adapter {adapter}: wrap() failed ({error_line(exc)})") from None

    return wrap
