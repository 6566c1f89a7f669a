"""Deep inspection of an mlx-lm target: module paths, layer outputs and caches, from a model built without weights.

Nothing here evaluates a parameter (mlx arrays are lazy). Weights are never read: at most the
safetensors headers (names only) of a local folder, to see which modules a quantised model quantises.
mlx and mlx-lm are imported inside the functions that need them.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path
from typing import Any, Optional, Union

from dflash_compat.contract import (
    FINAL_NORM_NAMES,
    MLX_CROP_CACHES,
    MLX_REFERENCE_EMBED_PATHS,
    MLX_REFERENCE_LAYERS_PATHS,
    MLX_REFERENCE_REPLAY_MODULES,
    MLX_ROTATING_CACHES,
    MLX_RUNTIME_REPLAY_MODULES,
)
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.exceptions import RemoteCodeError, error_line
from dflash_compat.inspection.foreign import contained
from dflash_compat.inspection.mlx_build import build_mlx_model, buildable_config, local_weight_names
from dflash_compat.modelfacts import (
    CacheFacts,
    ForwardFacts,
    LayerReturns,
    MlxCache,
    MlxFacts,
    MlxPaths,
    ModuleFacts,
    ModulePaths,
    Scaling,
    Skipped,
)
from dflash_compat.resolve.refs import Resolved
from dflash_compat.runtime.mlx_layout import cache_facts, get_path

__all__ = ["get_path", "cache_facts", "describe_mlx_model", "inspect_mlx_target"]


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
    names = ("embed_tokens", "tok_embeddings", "wte", "embed_in", "word_embeddings")
    named = [p for p, m in embeds if p.split(".")[-1] in names]
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
        linear = isinstance(module, (nn.Linear, nn.QuantizedLinear))
        if linear and ".layers." not in f".{path}." and _rows(module) == vocab:
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


_RECURRENT_HINTS = (
    "GatedDeltaNet", "Mamba", "SSM", "Mixer", "RWKV", "Recurrent", "ShortConv", "LinearAttention", "Lightning",
)


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
        parts_crop = kind == "CacheList" and all(p["kind"] in MLX_CROP_CACHES for p in c.get("parts", []))
        if kind in MLX_CROP_CACHES or parts_crop:
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


def _locate(model: Any, vocab: Optional[int]) -> tuple[ModulePaths, MlxPaths, Any, Any, list[Any]]:
    """Paths as found (the reference's fixed ones first, else by structure), the reference's own
    reach, and the embedding, head and layer modules."""
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
    head = get_path(model, head_path) if head_path else None
    paths = ModulePaths(
        embed=embed_path,
        head=head_path or (f"{embed_path}.as_linear" if tied else None),
        layers=layers_path,
        norm=_find_norm(model, layers_path),
        tied=tied,
        embed_class=type(embed).__name__ if embed is not None else None,
        head_class=type(head).__name__ if head is not None else None,
        layers_len=len(layers),
        layer_classes=tuple(sorted({_qualname(layer) for layer in layers if layer is not None})),
    )
    return paths, MlxPaths(embed=ref_embed, head=ref_head, layers=ref_layers), embed, head, layers


def _embed_scale(model: Any, embed_path: Optional[str], embed: Any) -> Scaling:
    """What the reference's bind() multiplies the block embedding by, besides input_embedding_scale:
    an `embed_scale` on the embedding module, else on the module that holds it."""
    owner = get_path(model, embed_path.rsplit(".", 1)[0]) if embed_path and "." in embed_path else model
    scale = getattr(embed, "embed_scale", None) if embed is not None else None
    where = f"{embed_path}.embed_scale" if scale is not None else None
    if scale is None and owner is not None and getattr(owner, "embed_scale", None) is not None:
        scale = owner.embed_scale
        where = f"{embed_path.rsplit('.', 1)[0]}.embed_scale" if embed_path and "." in embed_path else "embed_scale"
    value = float(scale) if isinstance(scale, (int, float)) else (
        float(scale.item()) if hasattr(scale, "item") and getattr(scale, "size", 0) == 1 else None)
    return Scaling(embed_scaled=value is not None, embed_scale=value, embed_scale_source=(where,) if where else ())


def _layer_returns(layers: list[Any]) -> LayerReturns:
    by_class = {type(layer).__name__: _call_returns(type(layer)) for layer in layers if layer is not None}
    returns = set(by_class.values())
    kind = "tuple" if "tuple" in returns else ("tensor" if returns == {"tensor"} else None)
    return LayerReturns(kind=kind, by_class=by_class)


def _cache_plan(model: Any, layers: list[Any]) -> tuple[bool, list[dict[str, Any]]]:
    """Whether the model makes its own caches, and one cache_facts() entry per layer (with the
    recurrent module behind each non-trimmable one)."""
    caches = model.make_cache() if hasattr(model, "make_cache") else None
    made = caches is not None
    if caches is None:
        from mlx_lm.models.cache import KVCache

        caches = [KVCache() for _ in layers]
    plan = []
    for i, entry in enumerate(caches):
        fact = cache_facts(entry)
        fact["layer"] = i
        recurrent = not fact["trimmable"] and fact["kind"] not in MLX_ROTATING_CACHES
        if recurrent and i < len(layers) and layers[i] is not None:
            fact["module"] = _recurrent_module(layers[i])
        plan.append(fact)
    return made, plan


def _mlx_cache(fact: dict[str, Any]) -> MlxCache:
    parts = fact.get("parts")
    return MlxCache(kind=fact["kind"], trimmable=fact["trimmable"], layer=fact.get("layer"), module=fact.get("module"),
                    window=fact.get("window"), keep=fact.get("keep"),
                    parts=tuple(_mlx_cache(p) for p in parts) if parts is not None else None)


def _gdn_normalize_qk() -> Optional[bool]:
    try:
        from mlx_lm.models import gated_delta
    except ImportError:  # pragma: no cover - every mlx-lm with qwen3_5 ships it
        return None
    return hasattr(gated_delta, "normalize_qk")


def describe_mlx_model(model: Any, config: dict[str, Any], quantization: Optional[dict] = None) -> ModuleFacts:
    """The facts the MLX rules read, from a built (not necessarily loaded) mlx-lm model."""
    import mlx.nn as nn
    import mlx_lm

    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    paths, reference, embed, head, layers = _locate(model, text.get("vocab_size", config.get("vocab_size")))
    try:
        params = tuple(inspect.signature(type(model).__call__).parameters)[1:]
    except (TypeError, ValueError):
        params = ()
    made, plan = _cache_plan(model, layers)
    reference_rollback = _rollback(plan, MLX_REFERENCE_REPLAY_MODULES, rotating_with_replay=False)
    mlx = MlxFacts(
        mlx_lm_version=getattr(mlx_lm, "__version__", None),
        model_type=config.get("model_type"),
        module=type(model).__module__,
        quantization=quantization,
        reference_paths=reference,
        embed_quantized=isinstance(embed, nn.QuantizedEmbedding),
        head_quantized=isinstance(head, nn.QuantizedLinear) or (
            bool(paths.tied) and isinstance(embed, nn.QuantizedEmbedding)),
        gdn_normalize_qk=_gdn_normalize_qk(),
        make_cache=made,
        caches=tuple(_mlx_cache(c) for c in plan),
        reference_rollback=reference_rollback,
        runtime_rollback=_rollback(plan, MLX_RUNTIME_REPLAY_MODULES, rotating_with_replay=True),
    )
    return ModuleFacts(
        framework="mlx",
        model_class=type(model).__qualname__,
        paths=paths,
        scaling=_embed_scale(model, paths.embed, embed),
        forward=ForwardFacts(accepts=params),
        layer_returns=_layer_returns(layers),
        cache=CacheFacts(layers=tuple(c["kind"] for c in plan), rollback=reference_rollback),
        mlx=mlx,
    )


# ---------------------------------------------------------------------------------------------
# the deep inspector
# ---------------------------------------------------------------------------------------------


def inspect_mlx_target(resolved: Resolved, options: CheckOptions) -> Union[ModuleFacts, Skipped]:
    """The module facts of the mlx-lm model the target's config describes; `paths`, `cache.rollback`
    (what the DFlash MLX port can do) and `mlx` are what the MLX rules read. A model mlx-lm cannot
    build is `mlx.supported = False` (rule DF510), not an error. Raises RemoteCodeError for a
    `model_file` outside the model folder (the user's error)."""
    config = buildable_config(resolved)
    if isinstance(config, Skipped):
        return config
    folder = Path(resolved.folder)
    weight_names, notes = local_weight_names(folder) if not getattr(resolved, "is_hub", False) else (None, ())
    try:
        with contained("mlx-lm"):  # its model modules may print and sys.exit() (olmo without hf_olmo)
            model, quant = build_mlx_model(config, folder=folder, weight_names=weight_names,
                                           trust_remote_code=options.trust_remote_code)
    except PermissionError as exc:
        return Skipped("remote-code", str(exc), framework="mlx")
    except RemoteCodeError:
        raise  # a model_file outside the model folder: the user's error, one line
    except Exception as exc:  # mlx-lm raises ValueError, KeyError, TypeError ... for configs it cannot build
        import mlx_lm

        error = error_line(exc)
        mlx = MlxFacts(mlx_lm_version=getattr(mlx_lm, "__version__", None), model_type=config.get("model_type"),
                       supported=False, error=error)
        return ModuleFacts(framework="mlx", mlx=mlx, notes=(*notes, f"mlx-lm cannot build this target ({error})"))
    if options.adapter:  # --adapter: the module rules see the adapted model
        from dflash_compat.adapters.loading import check_wrapper

        wrap = check_wrapper(options.adapter, "mlx")
        model = wrap(model) if wrap is not None else model
    facts = describe_mlx_model(model, config, quant)
    mlx = dataclasses.replace(facts.mlx, model_type=config.get("model_type"), weights_read=weight_names is not None)
    return dataclasses.replace(facts, adapter=options.adapter, mlx=mlx, notes=notes)
