"""A transformers target's forward signature and what its decoder layers return, read from the classes'
signatures, decorators and source (nothing is called)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import typing
from typing import Any, Optional

from dflash_compat.contract import REFERENCE_CALL_ARGS
from dflash_compat.inspection.torch_build import call_hook
from dflash_compat.modelfacts import DeprecatedKwarg, ForwardFacts, LayerReturns, ModulePaths

__all__ = ["forward_facts", "layer_return_facts"]


def _unwrap_chain(fn: Any) -> list:
    chain, seen = [], set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        chain.append(fn)
        fn = getattr(fn, "__wrapped__", None)
    return chain


def _deprecated_aliases(fn: Any) -> dict[str, DeprecatedKwarg]:
    """Keyword aliases added by transformers' `deprecate_kwarg` decorator (read from its closure, not by calling)."""
    out: dict[str, DeprecatedKwarg] = {}
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
            out[old] = DeprecatedKwarg(new_name=new or "", removed_in=m.group(1) if m else "",
                                       removed="removed starting" in str(msg))
    return out


def _typed_kwargs(param: inspect.Parameter) -> set[str]:
    ann = param.annotation
    args = typing.get_args(ann)
    td = args[0] if args else None
    keys = set()
    for obj in (td, ann):
        if isinstance(obj, type) and hasattr(obj, "__optional_keys__"):
            keys |= set(obj.__optional_keys__) | set(obj.__required_keys__)
    return keys


def _output_class(fn: Any) -> Optional[type]:
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


def _recorded_outputs(model: Any) -> set[str]:
    keys: set[str] = set()
    for obj in (model, call_hook(model, "get_decoder")):
        rec = getattr(obj, "_can_record_outputs", None)
        if isinstance(rec, dict):
            keys |= set(rec)
    return keys


def forward_facts(model: Any) -> ForwardFacts:
    """How the forward takes each argument the reference runtime passes, and what it returns."""
    fn = type(model).forward
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    explicit = [p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    var_kw = next((p for p in params if p.kind == p.VAR_KEYWORD), None)
    typed = _typed_kwargs(var_kw) if var_kw is not None else set()
    aliases = _deprecated_aliases(fn)
    how: dict[str, str] = {}
    for name in REFERENCE_CALL_ARGS:
        if name in explicit:
            how[name] = "explicit"
        elif name in aliases and aliases[name].new_name in explicit and not aliases[name].removed:
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
    cache_arg = "cache" if "cache" in explicit else ("past_key_values" if "past_key_values" in explicit else (
        next((n for n in explicit if n in ("state", "cache_params", "mems")), None)))
    out_cls = _output_class(fn)
    fields = tuple(getattr(out_cls, "__dataclass_fields__", {}) or {})
    return ForwardFacts(
        accepts=tuple(n for n in REFERENCE_CALL_ARGS if how[n] in ("explicit", "deprecated-alias", "kwargs")),
        params=tuple(explicit + ([f"**{var_kw.name}"] if var_kw is not None else [])),
        how=how,
        deprecated_kwargs=aliases,
        cache_arg=cache_arg,
        output_class=out_cls.__name__ if out_cls is not None else None,
        output_fields=fields,
        output_has_hidden_states=("hidden_states" in fields) if out_cls is not None else None,
        output_has_logits=("logits" in fields) if out_cls is not None else None,
    )


# --- what a decoder layer returns -----------------------------------------------------------------------------


def _annotation_kind(ann: Any) -> Optional[str]:
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
        kinds = {_annotation_kind(a) for a in typing.get_args(ann)} - {None}
        return "tuple" if "tuple" in kinds else (kinds.pop() if len(kinds) == 1 else None)
    if getattr(ann, "__name__", "") == "Tensor":
        return "tensor"
    return None


def _source_kind(fn: Any) -> Optional[str]:
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


def layer_return_facts(model: Any, paths: ModulePaths) -> Optional[LayerReturns]:
    """What each decoder layer class returns; None when the layers were not found."""
    if paths.layers is None:
        return None
    kinds: dict[str, Optional[str]] = {}
    for layer in model.get_submodule(paths.layers):
        cls = type(layer)
        if cls.__name__ in kinds:
            continue
        fn = cls.forward
        try:
            ann = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            ann = inspect.Signature.empty
        # The code's return statements first: annotations go stale (Gemma3's layer says tuple, returns a tensor).
        kinds[cls.__name__] = _source_kind(fn) or _annotation_kind(ann)
    found = set(kinds.values()) - {None}
    return LayerReturns(kind="tuple" if "tuple" in found else ("tensor" if found else None), by_class=kinds)
