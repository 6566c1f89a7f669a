"""Building an mlx-lm target from its config without weights, and telling MLX checkpoints apart.

mlx arrays are lazy, so building the mlx-lm class for a config allocates nothing until something
is evaluated; nothing here evaluates a parameter. mlx and mlx-lm are imported inside the functions
that need them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Union

from dflash_compat.exceptions import DFlashCompatError, MissingDependencyError, RemoteCodeError, WeightsError
from dflash_compat.files.safe_read import load_json_file
from dflash_compat.modelfacts import Skipped

__all__ = [
    "looks_like_mlx_model", "import_mlx", "model_classes", "build_mlx_model", "local_weight_names", "target_config",
]


def looks_like_mlx_model(folder: Union[str, Path], repo_id: Optional[str] = None) -> bool:
    """Whether a model folder is an MLX (mlx-lm) conversion rather than a PyTorch checkpoint.

    Signs, any of which suffices: a `quantization` block in config.json (mlx-lm's own format;
    transformers uses `quantization_config`), safetensors written by MLX (`__metadata__.format`
    == "mlx"), or a Hub repo of the mlx-community organisation.
    """
    if repo_id and repo_id.split("/", 1)[0].lower() == "mlx-community":
        return True
    folder = Path(folder)
    try:
        config = load_json_file(folder / "config.json")
    except DFlashCompatError:
        return False
    if not isinstance(config, dict):
        return False
    quant = config.get("quantization")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    if isinstance(quant, dict) or isinstance(text.get("quantization"), dict):
        return True
    from dflash_compat.files.safetensors_header import read_local_headers

    try:
        headers = read_local_headers(folder)
    except WeightsError:
        return False
    return any(h.metadata.get("format") == "mlx" for h in headers)


def import_mlx():
    """(mlx.core, mlx.nn, mlx_lm) or MissingDependencyError."""
    try:
        import mlx.core as mx
        import mlx.nn as nn
        import mlx_lm
    except ImportError as exc:
        raise MissingDependencyError(
            f"MLX inspection needs mlx and mlx-lm ({exc.name or exc} is not installed): "
            "pip install 'dflash-compat[mlx]'"
        ) from None
    return mx, nn, mlx_lm


def model_classes(config: dict[str, Any], folder: Optional[Path] = None, trust_remote_code: bool = False):
    """(Model, ModelArgs) for a config, as mlx-lm's loader picks them (model_type remapping,
    or the config's own `model_file` when remote code is trusted). Raises ValueError."""
    import_mlx()
    model_file = config.get("model_file")
    if model_file is not None:
        if not trust_remote_code:
            raise PermissionError(f"the config names its own model code ({model_file!r}); pass --trust-remote-code")
        path = _model_file_path(model_file, folder)
        import importlib.util

        spec = importlib.util.spec_from_file_location("dflash_compat_mlx_custom_model", path)
        module = importlib.util.module_from_spec(spec)
        # never write __pycache__ into the user's model folder
        saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            spec.loader.exec_module(module)
        finally:
            sys.dont_write_bytecode = saved
        return module.Model, module.ModelArgs
    from mlx_lm.utils import _get_classes

    return _get_classes(config)


def _model_file_path(model_file: Any, folder: Optional[Path]) -> Path:
    """The config's `model_file` as a file inside the model folder; RemoteCodeError for anything else
    (a path with separators, `..`, an absolute path, not a .py file, a link out of the folder)."""
    if (
        not isinstance(model_file, str) or not model_file.endswith(".py") or Path(model_file).name != model_file
        or "/" in model_file or "\\" in model_file or model_file.startswith(".") or "\x00" in model_file
    ):
        raise RemoteCodeError(
            f"target config: model_file {model_file!r} must be a plain .py file name in the model folder")
    if folder is None:
        raise RemoteCodeError(f"target config: model_file {model_file!r} needs a local model folder")
    folder = Path(folder)
    path = folder / model_file
    real = path.resolve()
    # A Hub snapshot's files are links into the repo cache's blobs/; anywhere else is out of bounds.
    allowed = [folder.resolve()]
    if folder.parent.name == "snapshots":
        allowed.append((folder.parent.parent / "blobs").resolve())
    if real.parent not in allowed or not real.is_file():
        raise RemoteCodeError(f"target config: model_file {model_file!r} is not a file in the model folder {folder}")
    return path


def _quantize_structure(model: Any, config: dict[str, Any], weight_names: Optional[set[str]]) -> Optional[dict]:
    """Turn the modules an mlx-lm quantised checkpoint stores quantised into their Quantized*
    classes (lazily: no weight is computed). Which modules: the per-module entries of
    `quantization`, then the checkpoint's `.scales` tensors when the headers are known, else every
    quantisable module (what `mlx_lm.convert -q` does)."""
    import mlx.nn as nn

    quant = config.get("quantization") or (config.get("text_config") or {}).get("quantization")
    if not isinstance(quant, dict) or "bits" not in quant:
        return None

    def predicate(path: str, module: Any):
        if path in quant:
            return quant[path]
        if not hasattr(module, "to_quantized"):
            return False
        if weight_names is not None:
            return f"{path}.scales" in weight_names
        return True

    group = quant.get("group_size", 64)

    def divisible(path: str, module: Any):
        # mlx_lm.convert leaves a module unquantised when the group size does not divide its width
        chosen = predicate(path, module)
        weight = getattr(module, "weight", None) if chosen else None
        size = chosen.get("group_size", group) if isinstance(chosen, dict) else group
        if weight is not None and weight.shape[-1] % size:
            return False
        return chosen

    nn.quantize(model, group_size=group, bits=quant["bits"], mode=quant.get("mode", "affine"),
                class_predicate=divisible)
    return {k: quant[k] for k in ("bits", "group_size", "mode") if k in quant}


def build_mlx_model(
    config: dict[str, Any],
    *,
    folder: Optional[Path] = None,
    weight_names: Optional[set[str]] = None,
    trust_remote_code: bool = False,
):
    """The mlx-lm Model for `config`, parameters unevaluated, quantised modules in place.
    Returns (model, quantization or None). Raises ValueError / PermissionError."""
    model_cls, args_cls = model_classes(config, folder, trust_remote_code)
    model = model_cls(args_cls.from_dict(dict(config)))
    quant = _quantize_structure(model, config, weight_names)
    return model, quant


def local_weight_names(folder: Path) -> tuple[Optional[set[str]], tuple[str, ...]]:
    """Tensor names of a local folder's weights (None when there are none or they cannot be read), and a note."""
    from dflash_compat.files.safetensors_header import read_local_headers

    try:
        headers = read_local_headers(folder)
    except WeightsError as exc:
        return None, (f"target weights: headers not read ({exc}); quantised modules assumed from the config",)
    if not headers:
        return None, ()
    return {name for h in headers for name in h.tensors}, ()


def buildable_config(resolved: Any) -> Union[dict[str, Any], Skipped]:
    """The target's config for an mlx-lm build, or why there is none (mlx missing, not an object)."""
    try:
        import_mlx()
    except MissingDependencyError as exc:
        return Skipped("mlx-inspector-missing", str(exc), framework="mlx")
    config = target_config(resolved)
    if not isinstance(config, dict):
        return Skipped("build-failed", "config.json is not a JSON object", framework="mlx")
    return config


def target_config(resolved: Any) -> Any:
    """The target's config.json, with generation_config.json's eos_token_id (what mlx-lm's loader uses)."""
    config = resolved.json("config.json")
    has_gen = "generation_config.json" in getattr(resolved, "files", {})
    gen = resolved.json("generation_config.json") if has_gen else None
    if isinstance(config, dict) and isinstance(gen, dict) and gen.get("eos_token_id") is not None:
        config = dict(config, eos_token_id=gen["eos_token_id"])
    return config
