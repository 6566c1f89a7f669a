"""Read an engine's Python sources straight from its wheel (or its source distribution, or an unpacked
tree), never importing them."""

from __future__ import annotations

import ast
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

__all__ = ["LayoutError", "Loc", "SourceTree"]


class LayoutError(RuntimeError):
    """An engine's source no longer looks the way an extractor expects: a file, registry or class
    is missing, or a list came out empty. Raised instead of writing a partial list."""


@dataclass(frozen=True)
class Loc:
    """A file and line inside a wheel, relative to its top package (`vllm/config/vllm.py`, 777)."""

    file: str
    line: int
    note: str = ""
    extra: tuple[tuple[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "line": self.line}
        if self.note:
            out["note"] = self.note
        out.update(self.extra)
        return out

    def with_(self, note: str = "", **extra: Any) -> "Loc":
        return Loc(self.file, self.line, note or self.note, self.extra + tuple(sorted(extra.items())))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class SourceTree:
    """The files of one installed-layout tree: a wheel (zip) or a folder holding the top package."""

    root: Path
    _zip: Optional[zipfile.ZipFile] = None
    _names: set[str] = field(default_factory=set)
    _parsed: dict[str, ast.Module] = field(default_factory=dict)
    _folders: dict[str, list[str]] = field(default_factory=dict)  # folder -> files directly inside it
    _sdist: Optional[dict[str, str]] = None  # a source distribution's .py files, read once (a .tar.gz has no index)

    @classmethod
    def open(cls, root: Path) -> "SourceTree":
        tree = cls(Path(root))
        if tree.root.is_file() and tree.root.name.endswith(".tar.gz"):
            tree._open_sdist()
        elif tree.root.is_file():
            tree._zip = zipfile.ZipFile(tree.root)
            tree._names = {n for n in tree._zip.namelist() if not n.endswith("/")}
        elif tree.root.is_dir():
            tree._names = {p.relative_to(tree.root).as_posix() for p in tree.root.rglob("*") if p.is_file()}
        else:
            raise LayoutError(f"{root}: no such wheel or folder")
        for name in sorted(tree._names):
            tree._folders.setdefault(name.rpartition("/")[0], []).append(name)
        return tree

    def _open_sdist(self) -> None:
        """A source distribution (`NAME-VERSION.tar.gz`): its files below the one top folder, which holds the
        same package tree a wheel does (vLLM's is ~45 MB where its wheel is ~300 MB)."""
        self._sdist = {}
        try:
            with tarfile.open(self.root, "r:gz") as tar:
                for member in tar:
                    top, _, name = member.name.partition("/")
                    if not member.isfile() or not name:
                        continue
                    self._names.add(name)
                    if name.endswith(".py"):
                        data = tar.extractfile(member)
                        self._sdist[name] = data.read().decode("utf-8") if data else ""
        except (tarfile.TarError, OSError, UnicodeDecodeError) as e:
            raise LayoutError(f"{self.root.name}: not a readable source distribution ({e})") from e

    def exists(self, path: str) -> bool:
        return path in self._names

    def read(self, path: str) -> str:
        if path not in self._names:
            raise LayoutError(f"{self.root.name}: {path} is missing")
        if self._zip is not None:
            return self._zip.read(path).decode("utf-8")
        if self._sdist is not None:
            if path not in self._sdist:  # not a .py file: read on demand
                with tarfile.open(self.root, "r:gz") as tar:
                    member = next(m for m in tar if m.isfile() and m.name.partition("/")[2] == path)
                    data = tar.extractfile(member)
                    self._sdist[path] = data.read().decode("utf-8") if data else ""
            return self._sdist[path]
        return (self.root / path).read_text(encoding="utf-8")

    def parse(self, path: str) -> ast.Module:
        if path not in self._parsed:
            try:
                self._parsed[path] = ast.parse(self.read(path), filename=path)
            except SyntaxError as e:
                raise LayoutError(f"{self.root.name}: {path} does not parse: {e}") from e
        return self._parsed[path]

    def files(self, folder: str, suffix: str = ".py") -> Iterator[str]:
        """Files directly inside `folder` (not below it), sorted."""
        for name in self._folders.get(folder.rstrip("/"), []):
            if name.endswith(suffix):
                yield name

    def packages(self, folder: str) -> Iterator[str]:
        """Sub-folders of `folder` that hold an `__init__.py`, sorted."""
        prefix = folder.rstrip("/") + "/"
        for sub in sorted(self._folders):
            if sub.startswith(prefix) and "/" not in sub[len(prefix):] and f"{sub}/__init__.py" in self._names:
                yield sub

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
