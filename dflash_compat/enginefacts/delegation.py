"""Does a class's hook really work, or does it hand the call to an attribute whose class lacks it?

SGLang's multimodal wrappers implement `set_dflash_layers_to_capture` as
`self.model.set_dflash_layers_to_capture(...)`; when the class stored in `self.model` has no such
method, DFLASH dies with AttributeError although the wrapper "defines" the hook. This module follows
such calls statically: which class `__init__` stores in the attribute (a class called directly, a
class attribute such as `body_cls`, a factory method's `return X(...)`, an `__init__` parameter's
default as passed down through `super().__init__(...)`), then that class's own hook, recursively.
What it cannot resolve it reports, so the caller fails loudly instead of guessing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from dflash_compat.enginefacts.pymod import ClassRef, Modules
from dflash_compat.enginefacts.source import Loc

__all__ = ["Gap", "Unresolved", "classes_of_call", "delegation_gap", "own_method", "self_attr"]

Scope = tuple[ClassRef, ast.FunctionDef]  # where an expression is written: its class and function


@dataclass(frozen=True)
class Gap:
    """The hook call that fails: `self.<attr>.<hook>(...)` where `self.<attr>` is `missing`."""

    loc: Loc  # the delegating call
    attr: str
    missing: ClassRef  # the class stored in the attribute, without the hook


class Unresolved(Exception):
    """A delegation whose target class cannot be found statically (the caller turns it into a LayoutError)."""


def _own_method(cls: ClassRef, name: str) -> Optional[ast.FunctionDef]:
    return next((s for s in cls.node.body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def _self_attr(node: ast.AST) -> Optional[str]:
    """`attr` for the expression `self.attr`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _delegations(fn: ast.FunctionDef, hook: str) -> list[tuple[str, int]]:
    """(attr, line) of each unguarded `self.<attr>.<hook>(...)` call in `fn` (a `hasattr(..., hook)`
    test anywhere in the function means the author expected it to be missing: not a failure)."""
    guarded = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "hasattr"
                  and len(n.args) == 2 and isinstance(n.args[1], ast.Constant) and n.args[1].value == hook
                  for n in ast.walk(fn))
    if guarded:
        return []
    return [(attr, n.lineno) for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == hook
            and (attr := _self_attr(n.func.value)) is not None]


def _params(fn: ast.FunctionDef) -> list[ast.arg]:
    return [*fn.args.posonlyargs, *fn.args.args][1:] + fn.args.kwonlyargs  # without self


def _defaults(cls: ClassRef, fn: ast.FunctionDef) -> dict[str, tuple[ast.expr, Scope]]:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    out = {a.arg: (d, (cls, fn)) for a, d in zip(positional[len(positional) - len(fn.args.defaults):],
                                                  fn.args.defaults)}
    out.update({a.arg: (d, (cls, fn)) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
    return out


def _super_init(fn: ast.FunctionDef) -> Optional[ast.Call]:
    for n in ast.walk(fn):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
                and isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Name)
                and n.func.value.func.id == "super"):
            return n
    return None


def _param_value(mods: Modules, ref: ClassRef, scope: Scope, name: str) -> Optional[tuple[ast.expr, Scope]]:
    """The expression `name` (a parameter of the `__init__` in `scope`) holds when the registry builds
    `ref` with its defaults: each subclass's default, passed down through `super().__init__(...)`."""
    owner = scope[0]
    chain = [(c, fn) for c in mods.mro(ref) if (fn := _own_method(c, "__init__")) is not None]
    if owner not in [c for c, _ in chain]:
        return None
    env = _defaults(*chain[0])
    for (cls, fn), (parent, parent_fn) in zip(chain, chain[1:]):
        if cls == owner:
            break
        call = _super_init(fn)
        if call is None:
            return None
        mine = {a.arg for a in _params(fn)}
        bound = dict(zip([a.arg for a in _params(parent_fn)], call.args))
        bound.update({k.arg: k.value for k in call.keywords if k.arg})
        nxt = _defaults(parent, parent_fn)
        for param, expr in bound.items():
            if isinstance(expr, ast.Name) and expr.id in mine:
                if expr.id in env:
                    nxt[param] = env[expr.id]
            else:
                nxt[param] = (expr, (cls, fn))
        env = nxt
    return env.get(name)


def _classes(mods: Modules, ref: ClassRef, expr: ast.expr, scope: Scope, depth: int = 0) -> list[ClassRef]:
    """The classes `expr` (called to build the attribute) may stand for; Unresolved when unknown."""
    cls, fn = scope
    if depth > 8:
        raise Unresolved(f"{cls.path}:{expr.lineno}")
    if isinstance(expr, ast.IfExp):
        return _classes(mods, ref, expr.body, scope, depth + 1) + _classes(mods, ref, expr.orelse, scope, depth + 1)
    if isinstance(expr, ast.Name):
        local = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)]
        if local:
            return [c for value in local for c in _classes(mods, ref, value, scope, depth + 1)]
        if expr.id in {a.arg for a in _params(fn)}:
            value = _param_value(mods, ref, scope, expr.id)
            if value is None:
                raise Unresolved(f"{cls.path}:{expr.lineno} (parameter {expr.id})")
            return _classes(mods, ref, value[0], value[1], depth + 1)
    attr = _self_attr(expr)
    if attr is not None:  # self.body_cls (a class attribute) or self.init_llm (a factory method)
        found = mods.find_member(ref, attr)
        if found is None:
            raise Unresolved(f"{cls.path}:{expr.lineno} (self.{attr})")
        owner, stmt = found
        if isinstance(stmt, ast.FunctionDef):
            returns = [n.value.func for n in ast.walk(stmt)
                       if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)]
            if not returns:
                raise Unresolved(f"{owner.path}:{stmt.lineno} (self.{attr}() returns no call)")
            return [c for r in returns for c in _classes(mods, ref, r, (owner, stmt), depth + 1)]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            return _classes(mods, ref, stmt.value, (owner, fn), depth + 1)
    resolved = mods.resolve(cls.module, expr)
    if isinstance(resolved, ClassRef):
        return [resolved]
    raise Unresolved(f"{cls.path}:{expr.lineno}")


def classes_of_call(mods: Modules, ref: ClassRef, func: ast.expr, scope: Scope) -> list[ClassRef]:
    """The classes the callee `func` (written in `scope`, built for `ref`) may stand for."""
    return _classes(mods, ref, func, scope)


def attribute_classes(mods: Modules, ref: ClassRef, attr: str) -> list[ClassRef]:
    """The classes the first `__init__` in `ref`'s MRO that assigns `self.<attr> = X(...)` may store."""
    for cls in mods.mro(ref):
        init = _own_method(cls, "__init__")
        if init is None:
            continue
        calls = [n.value for n in ast.walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                 and any(_self_attr(t) == attr for t in n.targets)]
        if calls:
            return [c for call in calls for c in _classes(mods, ref, call.func, (cls, init))]
    raise Unresolved(f"{ref.path}:{ref.node.lineno} (no __init__ builds self.{attr})")


def delegation_gap(mods: Modules, ref: ClassRef, hook: str, _seen: Optional[set] = None) -> Optional[Gap]:
    """None when `ref` has `hook` and every `self.<attr>.<hook>(...)` it makes reaches a class that has
    it too (recursively); else the first call that would raise AttributeError. Unresolved when a
    delegation's target cannot be found. `ref` must define or inherit `hook`."""
    seen = _seen if _seen is not None else set()
    found = mods.find_member(ref, hook)
    if found is None or not isinstance(found[1], ast.FunctionDef) or ref in seen:
        return None
    seen.add(ref)
    owner, fn = found
    for attr, line in _delegations(fn, hook):
        for target in attribute_classes(mods, ref, attr):
            if mods.find_member(target, hook) is None:
                return Gap(owner.loc(line), attr, target)
            deeper = delegation_gap(mods, target, hook, seen)
            if deeper is not None:
                return deeper
    return None


# Shared with the vLLM reader, which follows a model's language-model body the same way.
own_method = _own_method
self_attr = _self_attr
