"""Anchors: a place in an engine's code named by what survives edits (the file, the class or function
that holds it, and the code it must contain), not by a line number. `resolve` finds it in any
version and returns that version's line range; None when the anchor is gone (the fact is unknown
there). `anchor_at` turns a typed file:line citation into an anchor, read from the version it was
typed against."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from dflash_compat.enginefacts.source import LayoutError, SourceTree

__all__ = ["Anchor", "anchor_at", "code_features", "enclosing", "find_code", "resolve"]

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Anchor:
    """`path` inside the wheel; `symbol` the dotted class/function that holds the code ("" = module);
    `contains` the code (whitespace-insensitive) the first cited line holds; `end` the code of the last
    cited line ("" = a one-line citation); `span` the typed range's length, kept when `end` is gone."""

    path: str
    symbol: str
    contains: str
    end: str = ""
    span: int = 0
    offset: int = 0  # the first line's distance from the symbol's first line (picks among equal lines)

    def as_json(self) -> dict:
        out = {"path": self.path, "symbol": self.symbol, "contains": self.contains}
        if self.end:
            out["end"] = self.end
        if self.span:
            out["span"] = self.span
        if self.offset:
            out["offset"] = self.offset
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Anchor":
        return cls(d["path"], d.get("symbol", ""), d["contains"], d.get("end", ""), d.get("span", 0),
                   d.get("offset", 0))


def _defs(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _find_symbol(module: ast.Module, symbol: str) -> Optional[ast.AST]:
    node: ast.AST = module
    for part in symbol.split(".") if symbol else []:
        body = getattr(node, "body", [])
        # a def may sit under an `if` at module or class level; search the block's direct and nested defs
        # the last definition of a name is the one Python keeps (and the one a citation means)
        nxt = next((n for n in reversed(body) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.name == part), None)
        if nxt is None:
            nxt = next((n for n in _defs(node) if n is not node and n.name == part), None)
        if nxt is None:
            return None
        node = nxt
    return node


def enclosing(module: ast.Module, line: int) -> str:
    """The dotted name of the innermost class / function holding `line` ("" at module level)."""
    best: list[str] = []

    def walk(node: ast.AST, path: list[str]) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                if start <= line <= (child.end_lineno or child.lineno):
                    best = path + [child.name]
                    walk(child, best)
                    return
            elif getattr(child, "lineno", None) is not None and child.lineno <= line <= (child.end_lineno or 0):
                walk(child, path)

    walk(module, [])
    return ".".join(best)


def anchor_at(tree: SourceTree, path: str, lines: str) -> Anchor:
    """The anchor of a typed citation `path:lines` ("12" or "12-20") in this version of the code."""
    first, _, last = lines.partition("-")
    a, b = int(first), int(last or first)
    text = tree.read(path).splitlines()
    if not (1 <= a <= b <= len(text)):
        raise LayoutError(f"{path}:{lines} is outside the file ({len(text)} lines)")
    start = a
    while start <= b and not _norm(text[start - 1]):
        start += 1  # a citation that starts on a blank line anchors on its first code line
    start = min(start, b)
    while b > start and not _norm(text[b - 1]):
        b -= 1  # ... and ends on its last code line
    end_text = _norm(text[b - 1]) if b > start else ""
    module = tree.parse(path)
    symbol = enclosing(module, start)
    node = _find_symbol(module, symbol)
    first = _first_line(node, module)
    return Anchor(path, symbol, _norm(text[start - 1]), end_text, b - start, start - first)


def _first_line(node: ast.AST, module: ast.Module) -> int:
    if node is module or node is None:
        return 1
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def resolve(tree: SourceTree, anchor: Anchor) -> Optional[tuple[int, int]]:
    """(first, last) line of the anchor in this version, or None when its file, symbol or code is gone."""
    if not tree.exists(anchor.path):
        return None
    try:
        module = tree.parse(anchor.path)
    except LayoutError:
        return None
    node = _find_symbol(module, anchor.symbol)
    if node is None:
        return None
    lines = tree.read(anchor.path).splitlines()
    lo = _first_line(node, module)
    hi = (node.end_lineno or len(lines)) if node is not module else len(lines)
    hits = [i for i in range(lo, hi + 1) if anchor.contains and anchor.contains in _norm(lines[i - 1])]
    if not hits:
        return None
    start = min(hits, key=lambda i: (abs((i - lo) - anchor.offset), i))  # the occurrence nearest its old place
    if not anchor.end:
        return start, start
    ends = [i for i in range(start + 1, hi + 1) if anchor.end in _norm(lines[i - 1])]
    # the typed last line, nearest to the typed span; else keep the span inside the symbol
    if ends:
        end = min(ends, key=lambda i: abs((i - start) - anchor.span))
    else:
        end = min(start + anchor.span, hi)
    return start, end


def find_code(tree: SourceTree, path: str, contains: str) -> Optional[tuple[str, int]]:
    """(enclosing symbol, line) of the first line of `path` holding `contains`; None when absent."""
    if not tree.exists(path):
        return None
    want = _norm(contains)
    for i, line in enumerate(tree.read(path).splitlines(), 1):
        if want in _norm(line):
            return enclosing(tree.parse(path), i), i
    return None


def code_features(tree: SourceTree, features: dict[str, tuple[str, str, str]], required: bool = False) -> dict:
    """{feature: Loc} for each feature (path, code, note) whose code is in this version. `required`: the
    features' files are ones every release has, so a missing file is a layout change (LayoutError: the
    features are unknown at this release), not the absence of every feature."""
    from dflash_compat.enginefacts.source import Loc

    found = {}
    for name, (path, code, note) in features.items():
        if required and not tree.exists(path):
            raise LayoutError(f"{path} is missing (it holds the code of feature {name})")
        hit = find_code(tree, path, code)
        if hit is not None:
            found[name] = Loc(path, hit[1], note)
    return found
