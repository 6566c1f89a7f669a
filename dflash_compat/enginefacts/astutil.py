"""Small AST queries the extractors share: module-level dicts and sets, functions, calls, string literals."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from dflash_compat.enginefacts.pymod import string_value
from dflash_compat.enginefacts.source import LayoutError

__all__ = [
    "assigned",
    "calls_to",
    "function",
    "method",
    "string_dict",
    "string_set",
    "strings_in",
]


def assigned(body: list[ast.stmt], name: str, where: str) -> ast.expr:
    """The value last assigned to a module-level `name` (LayoutError when there is none)."""
    value = None
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            value = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            value = stmt.value
    if value is None:
        raise LayoutError(f"{where}: no module-level `{name} = ...`")
    return value


def string_dict(node: ast.expr, where: str) -> list[tuple[str, ast.expr, int]]:
    """(key, value, line) of a dict literal's string keys; `**spread` entries are skipped."""
    if not isinstance(node, ast.Dict):
        raise LayoutError(f"{where}: expected a dict literal, found {type(node).__name__}")
    out = []
    for key, value in zip(node.keys, node.values):
        text = string_value(key)
        if key is not None and text is not None:
            out.append((text, value, key.lineno))
    return out


def string_set(node: ast.expr) -> list[tuple[str, int]]:
    """(string, line) of a set/list/tuple literal, also inside `frozenset({...})` / `set([...])`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return string_set(node.args[0]) if node.args else []
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return [(s, e.lineno) for e in node.elts if (s := string_value(e)) is not None]
    return []


def strings_in(node: ast.AST) -> Iterator[tuple[str, int]]:
    for sub in ast.walk(node):
        if (s := string_value(sub)) is not None:
            yield s, sub.lineno


def function(body: list[ast.stmt], name: str, where: str) -> ast.FunctionDef:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    raise LayoutError(f"{where}: no function `{name}`")


def method(body: list[ast.stmt], cls: Optional[str], name: str, where: str) -> ast.FunctionDef:
    """A method `name` of class `cls` (any class when cls is None) at module level."""
    for stmt in body:
        if isinstance(stmt, ast.ClassDef) and (cls is None or stmt.name == cls):
            for sub in stmt.body:
                if isinstance(sub, ast.FunctionDef) and sub.name == name:
                    return sub
    raise LayoutError(f"{where}: no method `{name}`" + (f" in class {cls}" if cls else ""))


def calls_to(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name(...)` or `x.name(...)` below node, in source order."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                found.append(sub)
    return sorted(found, key=lambda c: (c.lineno, c.col_offset))
