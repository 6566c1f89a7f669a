"""Target module-tree facts from transformers, built on the meta device: no weights, no download beyond JSON.

Fills `TargetSpec` in place: where the embedding, output head and decoder layers live, the forward signature,
which cache layers the model builds and whether cropping really rolls them back, what a decoder layer returns.
torch and transformers are imported only inside these functions.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import typing
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator, Optional

from ..contract import FINAL_NORM_NAMES, REFERENCE_CALL_ARGS
from ..engine import CheckOptions
from ..resolve import Resolved
from ..specs import TargetSpec

__all__ = ["inspect_torch_target", "REFERENCE_CALL_ARGS"]

_LAYER_LIST_NAMES = ("layers", "h", "blocks", "layer", "block")
_NOT_TEXT = ("vision", "visual", "audio", "image", "vit", "mm_projector", "multi_modal_projector", "speech")
# Attributes that scale the embedding output inside the forward (module or decoder level).
_SCALE_ATTRS = ("scalar_embed_scale", "embed_scale", "embedding_multiplier", "scale_emb", "normalizer")


def _skip(target: TargetSpec, reason: str, detail: str, notes: list[str]) -> None:
    target.deep = {"inspected": False, "framework": "torch", "skipped": reason, "detail": detail}
    notes.append(f"module checks skipped ({reason}): {detail}")


@contextmanager
def _quiet() -> Iterator[None]:
    """transformers logs and warns while building models; the checker's output must stay clean."""
    import warnings

    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)


def _status(message: str):
    """A transient progress line on stderr (only on a terminal: CI logs stay clean)."""
    from ..console import make_console

    console = make_console(stderr=True)
    return console.status(message) if console.is_terminal else nullcontext()


def inspect_torch_target(resolved: Resolved, target: TargetSpec, options: CheckOptions, notes: list[str]) -> None:
    """Build the target on the meta device and record its module facts in `target` (in place)."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        _skip(target, "torch-missing", f"{exc.name or 'torch'} is not installed (pip install 'dflash-compat[torch]')", notes)
        return
    remote = target.needs_remote_code and options.trust_remote_code
    if target.needs_remote_code and not remote and not _native(target):
        _skip(target, "remote-code",
              f"the config's auto_map needs the repo's own Python code ({', '.join(sorted(target.auto_map or {}))}); "
              "rerun with --trust-remote-code to inspect it", notes)
        return
    with _quiet():
        built = _build(resolved, target, options, notes, remote)
        if built is None:
            return
        model, how = built
        if options.adapter:  # --adapter: the module rules see the adapted model
            from ..adapters.loading import check_wrapper

            wrap = check_wrapper(options.adapter, "torch")
            model = wrap(model) if wrap is not None else model
            how = dict(how, adapter=options.adapter)
        deep = {"inspected": True, "framework": "torch", "transformers_version": transformers.__version__, **how}
        if target.needs_remote_code and not remote:
            # What transformers itself does without trust_remote_code: its built-in class for this model_type.
            deep["remote_code"] = "not-imported-built-in-class-used"
            notes.append(f"auto_map not imported: inspected transformers' built-in {how['model_class']}")
        for step in (_locate, _embedding_and_logit_facts, _forward_facts, _layer_return_facts, _cache_facts):
            try:
                step(model, target, deep)
            except Exception as exc:  # noqa: BLE001 - one odd model must not cost the other facts
                error = deep.setdefault("fact_errors", {})[step.__name__.lstrip("_")] = _first_line(exc)
                if step is _locate:
                    # Our inspector failed, not the model: without the paths no module rule can judge it.
                    target.embed_path = target.lm_head_path = target.layers_path = None
                    target.tied_embeddings = None
                    deep.update(inspected=False, skipped="inspection-failed",
                                detail=f"locating the modules failed ({error})")
                    notes.append(f"module checks skipped (inspection-failed): {deep['detail']}")
                    break
        if options.adapter:
            _strip_wrapper_prefix(target, deep)
        deep["crop_semantics"] = _crop_semantics()
    target.deep = deep


_WRAPPER_PREFIX = "target."  # where an adapter shim keeps the original model


def _unwrapped(model):
    """The user's model under an adapter shim (its `.target`), else the model itself."""
    import torch.nn as nn

    inner = getattr(model, "target", None) if type(model).__name__ == "DFlashAdapted" else None
    return inner if isinstance(inner, nn.Module) else model


def _strip_wrapper_prefix(target: TargetSpec, deep: dict[str, Any]) -> None:
    """Paths as the user's model names them (`transformer.wte`), not through the shim (`target.transformer.wte`)."""

    def strip(path: Optional[str]) -> Optional[str]:
        return path[len(_WRAPPER_PREFIX):] if isinstance(path, str) and path.startswith(_WRAPPER_PREFIX) else path

    target.embed_path, target.lm_head_path, target.layers_path = (
        strip(target.embed_path), strip(target.lm_head_path), strip(target.layers_path))
    deep["norm_path"] = strip(deep.get("norm_path"))
    if deep.get("decoder_path") is not None:
        deep["decoder_path"] = "" if deep["decoder_path"] == "target" else strip(deep["decoder_path"])


# --- building -------------------------------------------------------------------------------------------------


def _native(target: TargetSpec) -> bool:
    """transformers has its own implementation of this model_type (so no repo code is needed to build it)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = target.raw.get("model_type")
    return isinstance(model_type, str) and model_type in CONFIG_MAPPING


def _make_config(resolved: Resolved, target: TargetSpec, options: CheckOptions, notes: list[str], remote: bool):
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if remote:  # trusted: transformers imports the repo's configuration code
        ref = resolved.repo_id if resolved.is_hub else str(resolved.folder)
        try:
            return AutoConfig.from_pretrained(ref, revision=resolved.revision, trust_remote_code=True)
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code is a skip, not our crash
            _skip(target, "build-failed", f"the repo's configuration code failed: {_first_line(exc)}", notes)
            return None
    model_type = target.raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        import transformers

        _skip(target, "unknown-model-type",
              f"transformers {transformers.__version__} does not know model_type {model_type!r}", notes)
        return None
    try:
        return CONFIG_MAPPING[model_type].from_dict(dict(target.raw))
    except Exception as exc:  # noqa: BLE001 - transformers validates configs strictly in 5.x
        _skip(target, "build-failed", f"transformers rejects the config: {_first_line(exc)}", notes)
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _model_class(config, target: TargetSpec, remote: bool):
    """The class the transformers reference loads: AutoModelForCausalLM, else AutoModelForImageTextToText
    (VLM wrappers), else the class named in `architectures`."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    if remote:
        for auto in (AutoModelForCausalLM, AutoModelForImageTextToText):
            if auto.__name__ in (getattr(config, "auto_map", None) or {}):
                return auto, auto.__name__
    for auto in (AutoModelForCausalLM, AutoModelForImageTextToText):
        if type(config) in auto._model_mapping:
            return auto, auto.__name__
    for arch in target.architectures:
        cls = getattr(transformers, arch, None) if isinstance(arch, str) else None
        if isinstance(cls, type) and getattr(cls, "config_class", None) is type(config):
            return cls, arch
    return None, None


def _meta_safe():
    """transformers' guard for models that call .item() on torch.linspace at init (remote code does), when present."""
    try:
        from transformers.initialization import meta_device_safe_creation_ops
    except ImportError:  # transformers 4.x
        return nullcontext()
    return meta_device_safe_creation_ops()


def _build(resolved: Resolved, target: TargetSpec, options: CheckOptions, notes: list[str], remote: bool):
    import torch

    config = _make_config(resolved, target, options, notes, remote)
    if config is None:
        return None
    cls, via = _model_class(config, target, remote)
    if cls is None:
        _skip(target, "no-causal-lm-class",
              f"transformers has no causal-LM class for model_type {target.raw.get('model_type')!r}", notes)
        return None
    kwargs = {"trust_remote_code": True} if remote else {}
    try:
        with _status(f"building {target.source} on the meta device ..."), torch.device("meta"), _meta_safe():
            model = cls.from_config(config, **kwargs) if hasattr(cls, "from_config") else cls(config)
    except Exception as exc:  # noqa: BLE001 - a model transformers cannot build is a finding, not a crash
        _skip(target, "build-failed", f"{via}.from_config failed on the meta device: {_first_line(exc)}", notes)
        return None
    return model, {"model_class": type(model).__name__, "auto_class": via}


# --- where things live ----------------------------------------------------------------------------------------


def _names(model) -> dict[int, str]:
    # named_modules() yields each module once, under its first path: the path engines use.
    return {id(m): n for n, m in model.named_modules()}


def _call(obj, method: str):
    fn = getattr(obj, method, None)
    if fn is None:
        return None
    try:
        return fn()
    except Exception:  # noqa: BLE001 - NotImplementedError/AttributeError on models without the hook
        return None


def _widths(emb, head, hidden: Optional[int]) -> tuple[Optional[int], Optional[bool]]:
    """How wide the embedding's output is, and whether the head takes hidden-size inputs, found by
    running both on meta tensors (no compute). OPT-350m-style models embed at a narrower width and
    project in / out around the decoder, which the draft cannot see through."""
    import torch

    width = takes = None
    if emb is not None:
        try:
            width = int(emb(torch.zeros((1, 1), dtype=torch.long, device="meta")).shape[-1])
        except Exception:  # an exotic embedding: fall back to its table's width
            w = getattr(emb, "weight", None)
            width = int(w.shape[-1]) if w is not None and w.dim() == 2 else None
    if head is not None and hidden:
        try:
            head(torch.zeros((1, 1, hidden), device="meta"))
            takes = True
        except Exception:
            takes = False
    return width, takes


def _is_text(path: str) -> bool:
    return not any(part in path.lower() for part in _NOT_TEXT)


def _text_config(model):
    cfg = model.config
    try:
        return cfg.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001 - older transformers: no decoder= keyword
        return getattr(cfg, "text_config", None) or cfg


def _locate(model, target: TargetSpec, deep: dict[str, Any]) -> None:
    import torch.nn as nn

    names = _names(model)
    text_cfg = _text_config(model)
    vocab = getattr(text_cfg, "vocab_size", None) or target.vocab_size
    # Decoder-only configs say num_hidden_layers; encoder-decoder style ones (Blenderbot, ...) map that name to
    # the encoder and count the decoder separately.
    dec = getattr(text_cfg, "decoder_layers", None)
    n_layers = (dec if isinstance(dec, int) and not isinstance(dec, bool) else None) or getattr(
        text_cfg, "num_hidden_layers", None) or target.num_hidden_layers

    emb, via = _call(model, "get_input_embeddings"), "get_input_embeddings"
    if emb is None or id(emb) not in names:
        emb, via = None, "search"
        for path, m in model.named_modules():
            if isinstance(m, nn.Embedding) and (vocab is None or m.num_embeddings == vocab) and _is_text(path):
                emb = m
                break
    target.embed_path = names.get(id(emb)) if emb is not None else None
    deep["embed_via"] = via if emb is not None else None
    deep["embed_class"] = type(emb).__name__ if emb is not None else None

    head = getattr(model, "lm_head", None)
    via = "lm_head"
    if not isinstance(head, nn.Module):
        head, via = _call(model, "get_output_embeddings"), "get_output_embeddings"
    if head is None or id(head) not in names:
        head, via = None, "search"
        for path, m in model.named_modules():
            if isinstance(m, nn.Linear) and (vocab is None or m.out_features == vocab) and _is_text(path):
                head = m  # the last vocab-wide projection is the output head
    target.lm_head_path = names.get(id(head)) if head is not None else None
    deep["lm_head_via"] = via if head is not None else None
    deep["lm_head_class"] = type(head).__name__ if head is not None else None
    deep["embed_width"], deep["head_takes_hidden"] = _widths(emb, head, target.hidden_size)
    w_emb, w_head = getattr(emb, "weight", None), getattr(head, "weight", None)
    target.tied_embeddings = bool(w_emb is not None and w_head is not None and w_head is w_emb) if head is not None else None

    decoder = _call(model, "get_decoder")
    deep["decoder_path"] = names.get(id(decoder)) if decoder is not None else None
    layers, via = None, None
    lists = [(p, m) for p, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) and _is_text(p)]
    prefix = deep["decoder_path"]
    scoped = [(p, m) for p, m in lists if prefix is None or prefix == "" or p.startswith(prefix + ".")] or lists

    def rank(item):
        p, m = item
        leaf = p.rsplit(".", 1)[-1]
        return (len(m) != n_layers, leaf not in _LAYER_LIST_NAMES, p.count("."), -len(m))

    if scoped:
        best = min(scoped, key=rank)
        if best[0].rsplit(".", 1)[-1] in _LAYER_LIST_NAMES or len(best[1]) == n_layers:
            layers, via = best
    target.layers_path = layers
    deep["layers_via"] = "get_decoder" if layers and prefix is not None and layers.startswith(f"{prefix}.") else (
        "search" if layers else None)
    if layers is not None:
        mod = model.get_submodule(layers)
        deep["layers_len"] = len(mod)
        deep["layer_classes"] = sorted({type(m).__name__ for m in mod})
    deep["config_layers"] = n_layers
    deep["norm_path"] = _final_norm(model, decoder, names)
    # Fixed attribute paths older runtimes use (z-lab `target.model.embed_tokens`, MLX-port `model.layers`).
    deep["has_model_embed_tokens"] = _has_path(model, "model.embed_tokens")
    deep["has_lm_head_attr"] = isinstance(getattr(model, "lm_head", None), nn.Module)


def _final_norm(model, decoder, names: dict[int, str]) -> Optional[str]:
    """The decoder's final norm (Llama/Qwen `model.norm`, GPT-2 `transformer.ln_f`, OPT `final_layer_norm`)."""
    import torch.nn as nn

    for owner in (decoder, model):
        if owner is None:
            continue
        for attr in FINAL_NORM_NAMES:
            m = getattr(owner, attr, None) if attr in getattr(owner, "_modules", {}) else None
            if isinstance(m, nn.Module) and "norm" in type(m).__name__.lower() and id(m) in names:
                return names[id(m)]
    return None


def _has_path(model, path: str) -> bool:
    try:
        model.get_submodule(path)
        return True
    except AttributeError:
        return False


def _float_attr(obj, name: str) -> Optional[float]:
    value = getattr(obj, name, None)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    # A tensor buffer on the meta device has no value; a real one (CPU) does.
    try:
        if getattr(value, "device", None) is not None and value.device.type != "meta" and value.numel() == 1:
            return float(value.item())
    except Exception:  # noqa: BLE001
        return None
    return None


def _embedding_and_logit_facts(model, target: TargetSpec, deep: dict[str, Any]) -> None:
    """Scales applied to the embedding output inside the forward, and what the forward does to the logits."""
    emb = model.get_submodule(target.embed_path) if target.embed_path is not None else None
    owner = model.get_submodule(deep["decoder_path"]) if deep.get("decoder_path") else None
    scale, source = 1.0, []
    for where, obj in (("embedding", emb), ("decoder", owner)):
        if obj is None:
            continue
        for attr in _SCALE_ATTRS:
            value = _float_attr(obj, attr)
            if value is not None and value != 1.0:
                scale *= value
                source.append(f"{where}.{attr}")
                break  # scalar_embed_scale and embed_scale carry the same number
    if emb is not None and "Scaled" in type(emb).__name__ and not source:
        source.append(f"embedding class {type(emb).__name__}")
        scale = float("nan")  # scaled, value unknown
    deep["embed_scale"] = None if not source else (None if scale != scale else scale)
    deep["embed_scaled"] = bool(source)
    deep["embed_scale_source"] = source
    text_cfg = _text_config(model)
    cap = getattr(text_cfg, "final_logit_softcapping", None)
    deep["logit_softcap"] = float(cap) if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap > 0 else None
    div = getattr(text_cfg, "logits_scaling", None)
    deep["logits_scaling"] = float(div) if isinstance(div, (int, float)) and not isinstance(div, bool) and div != 1 else None


# --- forward signature ----------------------------------------------------------------------------------------


def _unwrap_chain(fn) -> list:
    chain, seen = [], set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        chain.append(fn)
        fn = getattr(fn, "__wrapped__", None)
    return chain


def _deprecated_aliases(fn) -> dict[str, dict[str, str]]:
    """Keyword aliases added by transformers' `deprecate_kwarg` decorator (read from its closure, not by calling)."""
    out: dict[str, dict[str, str]] = {}
    for f in _unwrap_chain(fn):
        code, cells = getattr(f, "__code__", None), getattr(f, "__closure__", None)
        if code is None or not cells:
            continue
        free = dict(zip(code.co_freevars, cells))
        try:
            old = free["old_name"].cell_contents if "old_name" in free else None
            new = free["new_name"].cell_contents if "new_name" in free else None
            msg = free["version_message"].cell_contents if "version_message" in free else ""
        except ValueError:  # empty cell
            continue
        if isinstance(old, str):
            m = re.search(r"(\d+\.\d+(?:\.\d+)?)", str(msg))
            out[old] = {"new_name": new or "", "removed_in": m.group(1) if m else "",
                        "removed": "removed starting" in str(msg)}
    return out


def _typed_kwargs(param) -> set[str]:
    ann = param.annotation
    args = typing.get_args(ann)
    td = args[0] if args else None
    keys = set()
    for obj in (td, ann):
        if isinstance(obj, type) and hasattr(obj, "__optional_keys__"):
            keys |= set(obj.__optional_keys__) | set(obj.__required_keys__)
    return keys


def _output_class(fn):
    ann = inspect.signature(fn).return_annotation
    if isinstance(ann, str):
        mod = sys.modules.get(getattr(fn, "__module__", ""), None)
        try:
            ann = eval(ann, vars(mod) if mod else {})  # noqa: S307 - a transformers annotation string
        except Exception:  # noqa: BLE001
            return None
    candidates = typing.get_args(ann) or (ann,)
    for c in candidates:
        if isinstance(c, type) and hasattr(c, "__dataclass_fields__"):
            return c
    return None


def _recorded_outputs(model) -> set[str]:
    keys: set[str] = set()
    for obj in (model, _call(model, "get_decoder")):
        rec = getattr(obj, "_can_record_outputs", None)
        if isinstance(rec, dict):
            keys |= set(rec)
    return keys


def _forward_facts(model, target: TargetSpec, deep: dict[str, Any]) -> None:
    fn = type(model).forward
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    explicit = [p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    var_kw = next((p for p in params if p.kind == p.VAR_KEYWORD), None)
    typed = _typed_kwargs(var_kw) if var_kw is not None else set()
    aliases = _deprecated_aliases(fn)
    how: dict[str, str] = {}
    for name in REFERENCE_CALL_ARGS:
        if name in explicit:
            how[name] = "explicit"
        elif name in aliases and aliases[name]["new_name"] in explicit and not aliases[name]["removed"]:
            how[name] = "deprecated-alias"
        elif name in typed:
            how[name] = "kwargs"
        elif name == "output_hidden_states" and var_kw is not None and "hidden_states" in _recorded_outputs(model):
            how[name] = "kwargs"  # transformers' output recorder hooks the decoder layers for it
        elif var_kw is not None:
            # Accepted without a TypeError, but nothing says the model reads it.
            how[name] = "kwargs-passthrough" if typed else "untyped-kwargs"
        else:
            how[name] = "no"
    target.forward_accepts = [n for n in REFERENCE_CALL_ARGS if how[n] in ("explicit", "deprecated-alias", "kwargs")]
    deep["forward_params"] = explicit + ([f"**{var_kw.name}"] if var_kw is not None else [])
    deep["forward_accepts_how"] = how
    deep["deprecated_kwargs"] = aliases
    deep["cache_arg"] = "cache" if "cache" in explicit else ("past_key_values" if "past_key_values" in explicit else (
        next((n for n in explicit if n in ("state", "cache_params", "mems")), None)))
    out_cls = _output_class(fn)
    fields = list(getattr(out_cls, "__dataclass_fields__", {}) or {})
    deep["output_class"] = out_cls.__name__ if out_cls is not None else None
    deep["output_fields"] = fields
    deep["output_has_hidden_states"] = ("hidden_states" in fields) if out_cls is not None else None
    deep["output_has_logits"] = ("logits" in fields) if out_cls is not None else None


# --- what a decoder layer returns -----------------------------------------------------------------------------


def _annotation_kind(ann, module) -> Optional[str]:
    if ann is inspect.Signature.empty or ann is None:
        return None
    if isinstance(ann, str):
        text = ann.replace(" ", "")
        if text.startswith(("tuple", "Tuple", "typing.Tuple")):
            return "tuple"
        if text.endswith("Tensor"):
            return "tensor"
        return None
    origin = typing.get_origin(ann)
    if origin is tuple or ann is tuple:
        return "tuple"
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        kinds = {_annotation_kind(a, module) for a in typing.get_args(ann)} - {None}
        return "tuple" if "tuple" in kinds else (kinds.pop() if len(kinds) == 1 else None)
    if getattr(ann, "__name__", "") == "Tensor":
        return "tensor"
    return None


def _source_kind(fn) -> Optional[str]:
    """Classify the forward's return statements: any tuple -> "tuple" (no compute, just the AST)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return None
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return None
    tuple_names = {
        t.id for n in ast.walk(func) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Tuple)
        for t in n.targets if isinstance(t, ast.Name)
    }
    returns = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None
    if any(isinstance(r, ast.Tuple) or (isinstance(r, ast.Name) and r.id in tuple_names) for r in returns):
        return "tuple"
    return "tensor"


def _layer_return_facts(model, target: TargetSpec, deep: dict[str, Any]) -> None:
    if target.layers_path is None:
        return
    kinds: dict[str, Optional[str]] = {}
    for layer in model.get_submodule(target.layers_path):
        cls = type(layer)
        if cls.__name__ in kinds:
            continue
        fn = cls.forward
        module = sys.modules.get(cls.__module__)
        try:
            ann = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            ann = inspect.Signature.empty
        # The code's return statements first: annotations go stale (Gemma3's layer says tuple, returns a tensor).
        kinds[cls.__name__] = _source_kind(fn) or _annotation_kind(ann, module)
    deep["layer_returns_by_class"] = kinds
    found = set(kinds.values()) - {None}
    target.layer_returns = "tuple" if "tuple" in found else ("tensor" if found else None)


# --- the cache and whether cropping rolls it back -------------------------------------------------------------

_CACHE_BUILD = re.compile(r"\b(\w*Cache)\(\s*config\s*=")


def _cache_class(model):
    """The cache class the model's own forward builds when none is passed (DynamicCache for most)."""
    import transformers.cache_utils as cu

    for obj in (_call(model, "get_decoder"), model):
        if obj is None:
            continue
        try:
            src = inspect.getsource(type(obj).forward)
        except (OSError, TypeError):
            continue
        m = _CACHE_BUILD.search(src)
        if m:
            mod = sys.modules.get(type(obj).__module__)
            cls = getattr(mod, m.group(1), None) or getattr(cu, m.group(1), None)
            if isinstance(cls, type):
                return cls
    return getattr(cu, "DynamicCache", None)


def _module_writes_recurrent_state(model) -> Optional[bool]:
    mods = {type(m).__module__ for m in model.modules()}
    seen = False
    for name in mods:
        mod = sys.modules.get(name)
        if mod is None or not name.startswith(("transformers.models.", "transformers_modules.")):
            continue
        try:
            src = inspect.getsource(mod)
        except (OSError, TypeError):
            return None
        seen = True
        if "update_recurrent_state" in src or "recurrent_states" in src or "ssm_states" in src:
            return True
    return False if seen else None


def _cache_facts(model, target: TargetSpec, deep: dict[str, Any]) -> None:
    import transformers.cache_utils as cu

    base = _unwrapped(model)  # class-level facts belong to the user's model, not to an adapter shim
    supports = getattr(type(base), "_supports_default_dynamic_cache", None)
    if callable(supports) and not supports():
        # rwkv, xlstm, the original MiniMax: the model keeps its own recurrent state object.
        deep["cache_class"] = "model-managed"
        deep["cache_arg"] = deep.get("cache_arg") or "state"
        target.cache_layers = None
        target.rollback = "none"
        deep["non_croppable_layers"] = list(range(deep.get("config_layers") or 0))
        return
    cls = _cache_class(base)
    deep["cache_class"] = cls.__name__ if cls is not None else None
    try:
        cache = cls(config=model.config)
    except Exception as exc:  # noqa: BLE001 - 4.x caches take other arguments
        deep["cache_error"] = _first_line(exc)
        return
    layers = list(getattr(cache, "layers", []) or [])
    target.cache_layers = [type(layer).__name__ for layer in layers]
    try:
        types, _ = cu.get_layer_types_and_kwargs(_text_config(model))
    except Exception:  # noqa: BLE001
        types = [None] * len(layers)
    linear_mixin = getattr(cu, "LinearAttentionCacheLayerMixin", ())
    dummy = getattr(cu, "DummyLayer", ())
    sliding_cls = getattr(cu, "DynamicSlidingWindowLayer", ())
    recurrent_writes = _module_writes_recurrent_state(model)
    non_croppable, sliding, conv = [], [], []
    for i, (layer, kind) in enumerate(zip(layers, list(types) + [None] * len(layers))):
        if dummy and isinstance(layer, dummy):
            continue
        if linear_mixin and isinstance(layer, linear_mixin):
            # A conv-only state (LFM2 short convs) is restored exactly by cropping with past recording;
            # a recurrent / SSM state is not: rejected tokens stay folded into it.
            if kind == "conv" or recurrent_writes is False:
                conv.append(i)
            else:
                non_croppable.append(i)
            if getattr(layer, "is_sliding", False):
                sliding.append(i)
            continue
        flag = getattr(type(layer), "is_croppable", True)
        if isinstance(flag, bool) and not flag:
            non_croppable.append(i)
        if (sliding_cls and isinstance(layer, sliding_cls)) or getattr(layer, "is_sliding", False) is True:
            sliding.append(i)
    deep["non_croppable_layers"] = non_croppable
    deep["sliding_layers"] = sliding
    deep["conv_state_layers"] = conv
    deep["past_recording"] = hasattr(cache, "activate_past_recording")
    window = getattr(_text_config(model), "sliding_window", None)
    deep["sliding_window"] = window if isinstance(window, int) else None
    target.rollback = "none" if non_croppable else "crop"


def _crop_semantics() -> str:
    """How this transformers' DynamicCache.crop reads its argument, found by cropping a 3-token CPU cache."""
    import torch
    from transformers.cache_utils import DynamicCache

    kv = torch.zeros(1, 1, 3, 1)
    try:
        cache = DynamicCache()
        cache.update(kv, kv, 0)
        try:
            cache.crop(1)
        except ValueError:
            return "negative-count"  # 5.x: crop(-n) removes n tokens; a positive value raises
        return "absolute-length" if cache.get_seq_length() == 1 else "unknown"  # 4.x: crop(n) keeps n tokens
    except Exception:  # noqa: BLE001
        return "unknown"
