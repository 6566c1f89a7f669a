"""The engine citations the rules make, read from the rule files' source with `ast`, as the extractor reads an
engine's code: nothing is imported, so the extractor depends on no rule (the rules depend on its facts).

A citation is a call `EngineSource(ENGINE, PATH, LINES, NOTE, version=...)` (or a name bound to EngineSource
by an import, such as `S` in rules/_sources.py) whose first three arguments are string literals. Citations
of located facts (llama.cpp builds: `located(...)`) name their own lines per build and are not anchored.
A test compares what this reads with the citations of the imported rules."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Iterator, Optional

__all__ = ["Citation", "rule_citations", "rules_folder"]

Citation = tuple[str, str, str, Optional[str]]  # engine, path, lines, typed release (None: see TYPED_AGAINST)


def rules_folder() -> Path:
    """Where the rule files are (the installed `dflash_compat.rules` package), found without importing it."""
    spec = importlib.util.find_spec("dflash_compat.rules")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("dflash_compat.rules is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _names_of_engine_source(tree: ast.Module) -> set[str]:
    names = {"EngineSource"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname for a in node.names if a.name == "EngineSource" and a.asname}
    return names


def _calls(path: Path) -> Iterator[Citation]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = _names_of_engine_source(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
            continue
        args = node.args[:3]
        if len(args) < 3 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
            continue
        version = None
        for kw in node.keywords:
            if kw.arg == "version" and isinstance(kw.value, ast.Constant):
                version = kw.value.value
        if len(node.args) >= 5 and isinstance(node.args[4], ast.Constant):
            version = node.args[4].value
        yield args[0].value, args[1].value, args[2].value, version


def rule_citations(folder: Optional[Path] = None) -> set[Citation]:
    """Every (engine, path, lines, typed release) the rule files cite."""
    folder = folder or rules_folder()
    return {c for path in sorted(folder.rglob("*.py")) for c in _calls(path)}
