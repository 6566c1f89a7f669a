"""Static name resolution over a source tree: which class a name in a module stands for, and its bases.

Follows `import` / `from ... import ... as ...` (absolute and relative), module-level aliases
(`Foo = Bar`), re-exports through `__init__.py` and `from x import *`, across modules, without
importing anything. Names bound outside the tree (torch, typing) resolve to None.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

from dflash_compat.enginefacts.source import Loc, SourceTree

__all__ = ["ClassRef", "ModuleRef", "Modules", "string_value"]


@dataclass(frozen=True)
class ModuleRef:
    name: str  # dotted module name


@dataclass(frozen=True, eq=False)
class ClassRef:
    module: str
    path: str
    node: ast.ClassDef

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.node.name}"

    def loc(self, line: Optional[int] = None) -> Loc:
        return Loc(self.path, line or self.node.lineno)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassRef) and (self.path, self.node.name) == (other.path, other.node.name)

    def __hash__(self) -> int:
        return hash((self.path, self.node.name))


Ref = Union[ClassRef, ModuleRef, None]


@dataclass
class _Module:
    name: str
    path: str
    package: str  # the package relative imports start from
    bindings: dict[str, list[tuple]] = field(default_factory=dict)  # name -> bindings, in source order
    stars: list[str] = field(default_factory=list)  # modules imported with `*`
    body: list[ast.stmt] = field(default_factory=list)  # top-level statements, `if`/`try` blocks flattened


def string_value(node: Optional[ast.AST]) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking inside `if`, `try` and `with` blocks (conditional imports)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_statements(stmt.body)
            yield from _top_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]):
                yield from _top_statements(block)
        elif isinstance(stmt, ast.With):
            yield from _top_statements(stmt.body)


class Modules:
    """Modules of one source tree, by dotted name (`vllm.model_executor.models.llama`)."""

    def __init__(self, tree: SourceTree):
        self.tree = tree
        self._cache: dict[str, Optional[_Module]] = {}

    def path_of(self, dotted: str) -> Optional[str]:
        base = dotted.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if self.tree.exists(path):
                return path
        return None

    def _module(self, dotted: str) -> Optional[_Module]:
        if dotted not in self._cache:
            self._cache[dotted] = self._load(dotted)
        return self._cache[dotted]

    def _load(self, dotted: str) -> Optional[_Module]:
        path = self.path_of(dotted)
        if path is None:
            return None
        package = dotted if path.endswith("/__init__.py") else dotted.rpartition(".")[0]
        mod = _Module(dotted, path, package)
        for stmt in _top_statements(self.tree.parse(path).body):
            mod.body.append(stmt)
            self._bind(mod, stmt)
        return mod

    def _absolute(self, mod: _Module, module: Optional[str], level: int) -> str:
        if not level:
            return module or ""
        parts = mod.package.split(".")
        base = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*base, module] if module else base)

    def _bind(self, mod: _Module, stmt: ast.stmt) -> None:
        def add(name: str, binding: tuple) -> None:
            mod.bindings.setdefault(name, []).append(binding)

        if isinstance(stmt, ast.ClassDef):
            add(stmt.name, ("class", stmt))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    add(alias.asname, ("module", alias.name))
                else:
                    add(alias.name.split(".")[0], ("module", alias.name.split(".")[0]))
        elif isinstance(stmt, ast.ImportFrom):
            source = self._absolute(mod, stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name == "*":
                    mod.stars.append(source)
                else:
                    add(alias.asname or alias.name, ("from", source, alias.name))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    add(target.id, ("expr", stmt.value))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            add(stmt.target.id, ("expr", stmt.value))

    # -- resolution -------------------------------------------------------------------------------

    def lookup(self, module: str, name: str, _seen: Optional[set] = None) -> Ref:
        """What `name` stands for at the top level of `module` (latest binding that resolves)."""
        seen = _seen if _seen is not None else set()
        if (module, name) in seen:
            return None
        seen.add((module, name))
        mod = self._module(module)
        if mod is None:
            return None
        for binding in reversed(mod.bindings.get(name, [])):
            ref = self._follow(mod, binding, seen)
            if ref is not None:
                return ref
        for star in mod.stars:
            ref = self.lookup(star, name, seen)
            if ref is not None:
                return ref
        if self.path_of(f"{module}.{name}"):
            return ModuleRef(f"{module}.{name}")
        return None

    def _follow(self, mod: _Module, binding: tuple, seen: set) -> Ref:
        kind = binding[0]
        if kind == "class":
            return ClassRef(mod.name, mod.path, binding[1])
        if kind == "module":
            return ModuleRef(binding[1]) if self.path_of(binding[1]) else None
        if kind == "from":
            _, source, name = binding
            if self.path_of(f"{source}.{name}"):
                return ModuleRef(f"{source}.{name}")
            return self.lookup(source, name, seen)
        return self.resolve(mod.name, binding[1], seen)

    def resolve(self, module: str, expr: ast.AST, _seen: Optional[set] = None) -> Ref:
        """The class or module an expression written in `module` stands for (None: outside the tree)."""
        seen = _seen if _seen is not None else set()
        if isinstance(expr, ast.Name):
            return self.lookup(module, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            owner = self.resolve(module, expr.value, seen)
            if isinstance(owner, ModuleRef):
                return self.lookup(owner.name, expr.attr, seen)
            return None
        if isinstance(expr, ast.Subscript):  # Generic[T], Protocol[...]
            return self.resolve(module, expr.value, seen)
        return None

    def class_named(self, module: str, name: str) -> Optional[ClassRef]:
        ref = self.lookup(module, name)
        return ref if isinstance(ref, ClassRef) else None

    def module_body(self, module: str) -> list[ast.stmt]:
        mod = self._module(module)
        return mod.body if mod else []

    def module_path(self, module: str) -> Optional[str]:
        mod = self._module(module)
        return mod.path if mod else None

    def bases(self, ref: ClassRef) -> list[tuple[ast.expr, Ref]]:
        return [(base, self.resolve(ref.module, base)) for base in ref.node.bases]

    def mro(self, ref: ClassRef) -> Iterator[ClassRef]:
        """The class and its in-tree bases, depth first, each once."""
        seen: set[ClassRef] = set()
        stack = [ref]
        while stack:
            cls = stack.pop(0)
            if cls in seen:
                continue
            seen.add(cls)
            yield cls
            stack[0:0] = [b for _, b in self.bases(cls) if isinstance(b, ClassRef)]

    def declares_base(self, ref: ClassRef, target: ClassRef) -> Optional[tuple[ClassRef, ast.expr]]:
        """The class in `ref`'s MRO that names `target` among its bases, with that base expression."""
        for cls in self.mro(ref):
            for expr, base in self.bases(cls):
                if base == target:
                    return cls, expr
        return None

    def find_member(self, ref: ClassRef, name: str) -> Optional[tuple[ClassRef, ast.stmt]]:
        """The first class in the MRO that defines `name` (a method or a class attribute)."""
        for cls in self.mro(ref):
            for stmt in cls.node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                    return cls, stmt
                targets = stmt.targets if isinstance(stmt, ast.Assign) else (
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return cls, stmt
        return None
