"""Deep inspection of an mlx-lm target: module paths, layer outputs and caches, from a model built without weights.

mlx arrays are lazy, so building the mlx-lm class for a config allocates nothing until something
is evaluated; nothing here evaluates a parameter. Weights are never read: at most the safetensors
headers (names only) of a local folder, to see which modules a quantised model quantises.
mlx and mlx-lm are imported inside the functions that need them.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional, Union

from ..contract import (
    FINAL_NORM_NAMES,
    MLX_CROP_CACHES,
    MLX_REFERENCE_EMBED_PATHS,
    MLX_REFERENCE_HEAD_PATHS,
    MLX_REFERENCE_LAYERS_PATHS,
    MLX_REFERENCE_REPLAY_MODULES,
    MLX_ROTATING_CACHES,
    MLX_RUNTIME_REPLAY_MODULES,
)
from ..exceptions import MissingDependencyError, RemoteCodeError, WeightsError
from ..mlx_layout import cache_facts, get_path

__all__ = [
    "looks_like_mlx_model",
    "import_mlx",
    "model_classes",
    "build_mlx_model",
    "describe_mlx_model",
    "cache_facts",
    "inspect_mlx_target",
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
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(config, dict):
        return False
    quant = config.get("quantization")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    if isinstance(quant, dict) or isinstance(text.get("quantization"), dict):
        return True
    from .safetensors_header import read_local_headers

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
            f"MLX inspection needs mlx and mlx-lm ({exc.name or exc} is not installed): pip install 'dflash-compat[mlx]'"
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
        if weight is not None and weight.shape[-1] % (chosen.get("group_size", group) if isinstance(chosen, dict) else group):
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


# ---------------------------------------------------------------------------------------------
# facts about a built model
# ---------------------------------------------------------------------------------------------


def _is_module(x: Any) -> bool:
    import mlx.nn as nn

    return isinstance(x, nn.Module)


def _walk(model: Any):
    """(dotted path, value) for every Module and every list of Modules below `model`, breadth-first."""
    queue: list[tuple[str, Any]] = [("", model)]
    seen: set[int] = set()
    while queue:
        prefix, node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            if _is_module(value):
                yield path, value
                queue.append((path, value))
            elif isinstance(value, (list, tuple)) and value and all(_is_module(v) for v in value):
                yield path, value
                for i, v in enumerate(value):
                    queue.append((f"{path}.{i}", v))


def _rows(module: Any) -> Optional[int]:
    w = getattr(module, "weight", None) if hasattr(module, "get") else None
    return int(w.shape[0]) if w is not None and hasattr(w, "shape") else None


def _find_embed(model: Any, vocab: Optional[int]) -> Optional[str]:
    import mlx.nn as nn

    embeds = [(p, m) for p, m in _walk(model) if isinstance(m, (nn.Embedding, nn.QuantizedEmbedding))]
    if not embeds:
        return None
    named = [p for p, m in embeds if p.split(".")[-1] in ("embed_tokens", "tok_embeddings", "wte", "embed_in", "word_embeddings")]
    if named:
        return named[0]
    sized = [p for p, m in embeds if vocab is not None and _rows(m) == vocab]
    return (sized or [embeds[0][0]])[0]


def _find_head(model: Any, vocab: Optional[int]) -> Optional[str]:
    """A Linear that maps to the vocabulary, outside the decoder layers."""
    import mlx.nn as nn

    if vocab is None:
        return None
    for path, module in _walk(model):
        if isinstance(module, (nn.Linear, nn.QuantizedLinear)) and ".layers." not in f".{path}." and _rows(module) == vocab:
            return path
    return None


def _find_layers(model: Any) -> Optional[str]:
    lists = [(p, v) for p, v in _walk(model) if isinstance(v, (list, tuple))]
    if not lists:
        return None
    best = max(len(v) for _, v in lists)
    return next(p for p, v in lists if len(v) == best)




def _find_norm(model: Any, layers_path: Optional[str]) -> Optional[str]:
    """The final norm beside the decoder layers (`model.norm` for Llama / Qwen3), if it has a known name."""
    owner_path = layers_path.rsplit(".", 1)[0] if layers_path and "." in layers_path else ""
    owner = get_path(model, owner_path) if owner_path else model
    for name in FINAL_NORM_NAMES:
        m = owner.get(name) if owner is not None and hasattr(owner, "get") else None
        if m is not None and _is_module(m) and "norm" in type(m).__name__.lower():
            return f"{owner_path}.{name}" if owner_path else name
    return None


def _call_returns(cls: type) -> Optional[str]:
    """"tuple" if some `return` of cls.__call__ returns a tuple literal, "tensor" otherwise; None
    when the source cannot be read."""
    try:
        source = textwrap.dedent(inspect.getsource(cls.__call__))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0]
    returns = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested function's returns are not the layer's
        if isinstance(node, ast.Return):
            returns.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return "tuple" if any(isinstance(r.value, ast.Tuple) for r in returns) else "tensor"


def _qualname(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


_RECURRENT_HINTS = ("GatedDeltaNet", "Mamba", "SSM", "Mixer", "RWKV", "Recurrent", "ShortConv", "LinearAttention", "Lightning")


def _recurrent_module(layer: Any) -> str:
    """The class of the recurrent submodule that keeps a layer's non-trimmable state: a known
    replayable one if present, else the first whose name says it is recurrent, else the layer's."""
    names = [_qualname(m) for _, m in _walk(layer) if not isinstance(m, (list, tuple))]
    known = [n for n in names if n in MLX_RUNTIME_REPLAY_MODULES]
    if known:
        return known[0]
    hinted = [n for n in names if any(h in n.rsplit(".", 1)[-1] for h in _RECURRENT_HINTS)]
    return hinted[0] if hinted else _qualname(layer)


def _rollback(caches: list[dict[str, Any]], replayable: tuple[str, ...], rotating_with_replay: bool) -> str:
    """"crop" | "replay" | "none" for a cache plan, given which recurrent modules can be replayed."""
    kinds = set()
    for c in caches:
        kind = c["kind"]
        if kind in MLX_CROP_CACHES or (kind == "CacheList" and all(p["kind"] in MLX_CROP_CACHES for p in c.get("parts", []))):
            continue
        if kind in MLX_ROTATING_CACHES:
            kinds.add("rotating")
            continue
        if c.get("module") in replayable:
            kinds.add("replay")
            continue
        return "none"
    if "replay" in kinds:
        # The reference counts a wrapped rotating cache as one more non-trimmable entry and its
        # replay bookkeeping then fails; our runtime cuts rotating caches itself.
        return "replay" if rotating_with_replay or "rotating" not in kinds else "none"
    return "crop"


def describe_mlx_model(model: Any, config: dict[str, Any], quantization: Optional[dict] = None) -> dict[str, Any]:
    """The facts the MLX rules read, from a built (not necessarily loaded) mlx-lm model."""
    import mlx.nn as nn
    import mlx_lm

    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    vocab = text.get("vocab_size", config.get("vocab_size"))
    facts: dict[str, Any] = {
        "supported": True,
        "mlx_lm_version": getattr(mlx_lm, "__version__", None),
        "module": type(model).__module__,
        "model_class": type(model).__qualname__,
        "quantization": quantization,
    }

    ref_embed = next((p for p in MLX_REFERENCE_EMBED_PATHS if get_path(model, p) is not None), None)
    embed_path = ref_embed or _find_embed(model, vocab)
    embed = get_path(model, embed_path) if embed_path else None
    if vocab is None and embed is not None:
        vocab = _rows(embed)
    lm = get_path(model, "language_model") or model
    ref_head = "lm_head" if get_path(model, "lm_head") is not None else (
        "language_model.lm_head" if get_path(lm, "lm_head") is not None else None
    )
    head_path = ref_head or _find_head(model, vocab)
    tied = head_path is None and embed is not None and hasattr(embed, "as_linear")
    if ref_head is None and ref_embed is not None and hasattr(get_path(model, ref_embed), "as_linear"):
        ref_head = f"{ref_embed}.as_linear"  # what the reference falls back to, tied or not
    ref_layers = next((p for p in MLX_REFERENCE_LAYERS_PATHS if get_path(model, p) is not None), None)
    layers_path = ref_layers or _find_layers(model)
    layers = list(get_path(model, layers_path) or []) if layers_path else []

    facts["reference_paths"] = {"embed": ref_embed, "head": ref_head, "layers": ref_layers}
    facts["paths"] = {
        "embed": embed_path,
        "head": head_path or (f"{embed_path}.as_linear" if tied else None),
        "layers": layers_path,
    }
    facts["norm_path"] = _find_norm(model, layers_path)
    facts["tied"] = tied
    facts["embed_class"] = type(embed).__name__ if embed is not None else None
    head = get_path(model, head_path) if head_path else None
    facts["head_class"] = type(head).__name__ if head is not None else None
    facts["quantized"] = {
        "embed": isinstance(embed, nn.QuantizedEmbedding),
        "head": isinstance(head, nn.QuantizedLinear) or (tied and isinstance(embed, nn.QuantizedEmbedding)),
    }
    facts["num_layers"] = len(layers)
    classes = sorted({_qualname(layer) for layer in layers if layer is not None})
    facts["layer_classes"] = classes
    by_class = {type(layer).__name__: _call_returns(type(layer)) for layer in layers if layer is not None}
    facts["layer_returns_by_class"] = by_class
    returns = set(by_class.values())
    facts["layer_returns"] = "tuple" if "tuple" in returns else ("tensor" if returns == {"tensor"} else None)
    # What the reference's bind() multiplies the block embedding by, besides input_embedding_scale:
    # an `embed_scale` on the embedding module, else on the module that holds it.
    owner = get_path(model, embed_path.rsplit(".", 1)[0]) if embed_path and "." in embed_path else model
    scale = getattr(embed, "embed_scale", None) if embed is not None else None
    where = f"{embed_path}.embed_scale" if scale is not None else None
    if scale is None and owner is not None and getattr(owner, "embed_scale", None) is not None:
        scale = owner.embed_scale
        where = f"{embed_path.rsplit('.', 1)[0]}.embed_scale" if embed_path and "." in embed_path else "embed_scale"
    facts["embed_scale"] = float(scale) if isinstance(scale, (int, float)) else (
        float(scale.item()) if hasattr(scale, "item") and getattr(scale, "size", 0) == 1 else None)
    facts["embed_scale_source"] = where
    try:
        from mlx_lm.models import gated_delta

        facts["gdn_normalize_qk"] = hasattr(gated_delta, "normalize_qk")
    except ImportError:  # pragma: no cover - every mlx-lm with qwen3_5 ships it
        facts["gdn_normalize_qk"] = None
    try:
        params = list(inspect.signature(type(model).__call__).parameters)[1:]
    except (TypeError, ValueError):
        params = []
    facts["forward_accepts"] = params

    caches = model.make_cache() if hasattr(model, "make_cache") else None
    facts["make_cache"] = caches is not None
    if caches is None:
        from mlx_lm.models.cache import KVCache

        caches = [KVCache() for _ in layers]
    plan = []
    for i, entry in enumerate(caches):
        fact = cache_facts(entry)
        fact["layer"] = i
        if not fact["trimmable"] and fact["kind"] not in MLX_ROTATING_CACHES and i < len(layers) and layers[i] is not None:
            fact["module"] = _recurrent_module(layers[i])
        plan.append(fact)
    facts["caches"] = plan
    facts["reference_rollback"] = _rollback(plan, MLX_REFERENCE_REPLAY_MODULES, rotating_with_replay=False)
    facts["runtime_rollback"] = _rollback(plan, MLX_RUNTIME_REPLAY_MODULES, rotating_with_replay=True)
    return facts


# ---------------------------------------------------------------------------------------------
# the deep inspector
# ---------------------------------------------------------------------------------------------


def _weight_names(folder: Path, notes: list[str]) -> Optional[set[str]]:
    from .safetensors_header import read_local_headers

    try:
        headers = read_local_headers(folder)
    except WeightsError as exc:
        notes.append(f"target weights: headers not read ({exc}); quantised modules assumed from the config")
        return None
    if not headers:
        return None
    return {name for h in headers for name in h.tensors}


def inspect_mlx_target(resolved: Any, target_spec: Any, options: Any, notes: list[str]) -> None:
    """Fill `target_spec`'s module-tree fields from the mlx-lm model its config describes.

    Sets embed_path / lm_head_path / layers_path / tied_embeddings / cache_layers / rollback
    (what the DFlash MLX port can do) / layer_returns / forward_accepts, and `deep` =
    {"inspected": True, "framework": "mlx", "mlx": {...facts...}}. A model mlx-lm cannot build is
    recorded as deep["mlx"]["supported"] = False (rule DF510), not raised. Raises
    MissingDependencyError without mlx / mlx-lm.
    """
    import_mlx()
    config = resolved.json("config.json")
    if not isinstance(config, dict):
        return
    folder = Path(resolved.folder)
    gen = resolved.json("generation_config.json") if "generation_config.json" in getattr(resolved, "files", {}) else None
    if isinstance(gen, dict) and gen.get("eos_token_id") is not None:
        config = dict(config, eos_token_id=gen["eos_token_id"])
    trust = bool(getattr(options, "trust_remote_code", False))
    weight_names = _weight_names(folder, notes) if not getattr(resolved, "is_hub", False) else None
    deep: dict[str, Any] = {"inspected": True, "framework": "mlx"}
    try:
        model, quant = build_mlx_model(config, folder=folder, weight_names=weight_names, trust_remote_code=trust)
    except PermissionError as exc:
        target_spec.deep = {"inspected": False, "framework": "mlx", "skipped": "remote-code", "detail": str(exc)}
        notes.append(f"MLX module checks skipped: {exc}")
        return
    except RemoteCodeError:
        raise  # a model_file outside the model folder: the user's error, one line
    except Exception as exc:  # mlx-lm raises ValueError, KeyError, TypeError ... for configs it cannot build
        import mlx_lm

        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        deep["mlx"] = {
            "supported": False,
            "error": f"{type(exc).__name__}: {message}",
            "model_type": config.get("model_type"),
            "mlx_lm_version": getattr(mlx_lm, "__version__", None),
        }
        target_spec.deep = deep
        notes.append(f"mlx-lm cannot build this target ({type(exc).__name__}: {message})")
        return
    adapter = getattr(options, "adapter", None)
    if adapter:  # --adapter: the module rules see the adapted model
        from ..adapters.loading import check_wrapper

        wrap = check_wrapper(adapter, "mlx")
        model = wrap(model) if wrap is not None else model
    facts = describe_mlx_model(model, config, quant)
    if adapter:
        facts["adapter"] = adapter
    facts["model_type"] = config.get("model_type")
    facts["weights_read"] = weight_names is not None
    deep["mlx"] = facts
    # the keys the framework-neutral module rules (DF70x) read, as the torch inspector names them
    deep["model_class"] = facts["model_class"]
    deep["layers_len"] = facts["num_layers"]
    deep["layer_classes"] = facts["layer_classes"]
    deep["layer_returns_by_class"] = facts["layer_returns_by_class"]
    deep["embed_class"] = facts["embed_class"]
    deep["norm_path"] = facts["norm_path"]
    deep["embed_scaled"] = facts["embed_scale"] is not None
    deep["embed_scale"] = facts["embed_scale"]
    deep["embed_scale_source"] = [facts["embed_scale_source"]] if facts["embed_scale_source"] else []
    target_spec.embed_path = facts["paths"]["embed"]
    target_spec.lm_head_path = facts["paths"]["head"]
    target_spec.layers_path = facts["paths"]["layers"]
    target_spec.tied_embeddings = facts["tied"]
    target_spec.cache_layers = [c["kind"] for c in facts["caches"]]
    target_spec.rollback = facts["reference_rollback"]
    target_spec.layer_returns = facts["layer_returns"]
    target_spec.forward_accepts = facts["forward_accepts"]
    target_spec.deep = deep
