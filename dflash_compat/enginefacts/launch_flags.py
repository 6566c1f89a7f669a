"""The command-line flags each engine release accepts (and the ones it has removed), read from the engine's
own argument parser, for `dflash-check launch`: data/launch_flags.json, one entry per engine and version.

  python -m dflash_compat.enginefacts.launch_flags vllm==0.33.0=/work/wheels/src/vllm-0.33.0 ...

Every flag keeps the file and line that declares it (relative to the wheel's top package; for llama.cpp,
relative to the source tree's root). Nothing is imported from the engines: Python sources are parsed with
`ast`, llama.cpp's common/arg.cpp is read as text.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

from dflash_compat.enginefacts.source import LayoutError, SourceTree
from dflash_compat.engines import DATA_DIR

__all__ = ["DATA", "extract", "vllm_flags", "sglang_flags", "llamacpp_flags", "main"]

DATA = DATA_DIR / "launch_flags.json"
ABOUT = ("Command-line flags (and vLLM speculative-config keys) each engine release accepts, read from its own "
         "argument parser by `python -m dflash_compat.enginefacts.launch_flags`. Do not edit by hand. Each name "
         "maps to [file, line] of its declaration (vLLM/SGLang: relative to the wheel's top package; llama.cpp: "
         "the source tree). `removed`: flags the parser still declares only to refuse them.")

Found = dict[str, list[Any]]


def _literal_flags(tree: SourceTree, path: str, found: Found) -> None:
    """Every string literal starting with `-` passed positionally to an `add_argument(...)` call."""
    for node in ast.walk(tree.parse(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                    found.setdefault(arg.value, [path, arg.lineno])


def _class_fields(tree: SourceTree, path: str, names: set[str]) -> dict[str, tuple[int, ast.AnnAssign]]:
    out: dict[str, tuple[int, ast.AnnAssign]] = {}
    for node in tree.parse(path).body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.setdefault(item.target.id, (item.lineno, item))
    return out


def _defines(tree: SourceTree, path: str, name: str) -> bool:
    return any(isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == name for n in tree.parse(path).body)


def _imported_module(tree: SourceTree, path: str, name: str) -> str:
    """The file of the module `path` imports `name` from (`from vllm.x.y import name`)."""
    for node in ast.walk(tree.parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
            base = node.module.replace(".", "/")
            for candidate in (f"{base}.py", f"{base}/__init__.py"):
                if tree.exists(candidate):
                    return candidate
            raise LayoutError(f"{path}: imports {name} from {node.module}, which is not in the sources")
    raise LayoutError(f"{path}: no `from ... import {name}`; has the layout changed?")


def vllm_flags(tree: SourceTree) -> dict[str, Any]:
    """vLLM: `add_argument` literals of the engine and frontend parsers, the frontend dataclasses' fields
    (each becomes `--field-name`), and SpeculativeConfig's fields (the keys --speculative-config takes)."""
    flags: Found = {}
    serve = "vllm/entrypoints/cli/serve.py"
    # the frontend parser is the module `vllm serve` takes make_arg_parser from (0.33: entrypoints/common/,
    # 0.32: entrypoints/launchers/); its frontend dataclasses may live in a module it imports them from
    front = _imported_module(tree, serve, "make_arg_parser")
    paths = ["vllm/engine/arg_utils.py", serve, front]
    for path in paths:
        _literal_flags(tree, path, flags)
    for cls in ("BaseFrontendArgs", "FrontendArgs"):
        where = front if _defines(tree, front, cls) else _imported_module(tree, front, cls)
        for name, (line, _) in _class_fields(tree, where, {cls}).items():
            flags.setdefault("--" + name.replace("_", "-"), [where, line])
    spec_path = "vllm/config/speculative.py"
    fields = _class_fields(tree, spec_path, {"SpeculativeConfig"})
    keys = {name: [spec_path, line] for name, (line, _) in fields.items()}
    for must, where in (("--speculative-config", flags), ("num_speculative_tokens", keys), ("method", keys)):
        if must not in where:
            raise LayoutError(f"vllm: {must} not found; has the layout changed?")
    out = {"flags": dict(sorted(flags.items())), "speculative_config_keys": dict(sorted(keys.items())),
           "underscores": True}
    methods = _literal_alias(tree, spec_path, "SpeculativeMethod")
    if methods is not None:
        # `method: SpeculativeMethod | None`: pydantic checks the Literal exactly (case included); from 0.34.0 a
        # field validator also takes a method a plugin registered (`_validate_method`)
        plugins = _method_validator(tree, spec_path, "SpeculativeConfig", "method")
        out["values"] = {"method": {"accepted": methods[0], "source": [spec_path, methods[1]], "case_sensitive": True,
                                    "plugins": [spec_path, plugins] if plugins else None}}
    return out


def _literal_alias(tree: SourceTree, path: str, name: str) -> Optional[tuple[list[str], int]]:
    """The strings of a module-level `name = Literal[...]`, nested Literal aliases flattened (as
    typing.get_args flattens them), and its line; None where the module has no such alias."""
    assigns = {node.targets[0].id: node for node in tree.parse(path).body
               if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}

    def values(expr: ast.expr, depth: int) -> list[str]:
        if depth > 16 or not (isinstance(expr, ast.Subscript) and getattr(expr.value, "id", None) == "Literal"):
            raise LayoutError(f"{path}: {name} is not a Literal of strings; has the layout changed?")
        elts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        out: list[str] = []
        for e in elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                out.append(e.value)
            elif isinstance(e, ast.Name) and e.id in assigns:
                out += values(assigns[e.id].value, depth + 1)
            else:
                raise LayoutError(f"{path}: {name} holds {ast.dump(e)[:60]}; has the layout changed?")
        return out

    if name not in assigns:
        return None
    return sorted(dict.fromkeys(values(assigns[name].value, 0))), assigns[name].lineno


def _method_validator(tree: SourceTree, path: str, cls: str, field: str) -> Optional[int]:
    """The line of a `@field_validator("<field>")` method of `cls`, if it has one."""
    for node in tree.parse(path).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and any(
                        isinstance(d, ast.Call) and getattr(d.func, "id", None) == "field_validator"
                        and any(isinstance(a, ast.Constant) and a.value == field for a in d.args)
                        for d in item.decorator_list):
                    return item.lineno
    return None


def _arg_aliases(annotation: ast.expr) -> tuple[list[str], bool]:
    """The `Arg(aliases=[...], no_cli=...)` inside an `A[T, Arg(...)]` annotation."""
    aliases: list[str] = []
    no_cli = False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Arg":
            for kw in node.keywords:
                if kw.arg == "aliases" and isinstance(kw.value, (ast.List, ast.Tuple)):
                    aliases += [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
                if kw.arg == "no_cli" and isinstance(kw.value, ast.Constant):
                    no_cli = bool(kw.value.value)
    return aliases, no_cli


def sglang_flags(tree: SourceTree) -> dict[str, Any]:
    """SGLang: every `A[...]` field of the ServerArgs field groups becomes `--field-name` plus its aliases
    (srt/arg_groups/arg_utils.py `_field_to_cli_name`, `add_cli_args_from_dataclass`), minus `no_cli`
    fields; plus the `add_argument` literals of srt/server_args.py."""
    flags: Found = {}
    for path in tree.files("sglang/srt/arg_groups/fields"):
        for node in ast.walk(tree.parse(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                    continue
                ann = item.annotation
                if not (isinstance(ann, ast.Subscript) and getattr(ann.value, "id", None) == "A"):
                    continue
                aliases, no_cli = _arg_aliases(ann)
                if no_cli:
                    continue
                for name in ["--" + item.target.id.replace("_", "-"), *aliases]:
                    flags.setdefault(name, [path, item.lineno])
    _literal_flags(tree, "sglang/srt/server_args.py", flags)
    for must in ("--speculative-algorithm", "--model-path", "--tp-size"):
        if must not in flags:
            raise LayoutError(f"sglang: {must} not found; has the layout changed?")
    out = {"flags": dict(sorted(flags.items())), "underscores": False}
    algorithms = _sglang_algorithms(tree)
    if algorithms is not None:
        out["values"] = {"algorithm": algorithms}
    return out


def _sglang_algorithms(tree: SourceTree) -> Optional[dict[str, Any]]:
    """`--speculative-algorithm`: SpeculativeAlgorithm.from_string upper-cases the name and takes an enum
    member, a reserved alias (`_RESERVED_ALIASES`, spec_registry.py) or a plugin's registered name."""
    path, registry = "sglang/srt/speculative/spec_info.py", "sglang/srt/speculative/spec_registry.py"
    if not tree.exists(path):
        return None
    names: list[str] = []
    line = 0
    upper = False
    for node in tree.parse(path).body:
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeAlgorithm":
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                    names.append(item.targets[0].id)
                if isinstance(item, ast.FunctionDef) and item.name == "from_string":
                    line = item.lineno
                    upper = any(isinstance(n, ast.Attribute) and n.attr == "upper" for n in ast.walk(item))
    if not names or not line:
        raise LayoutError(f"sglang: SpeculativeAlgorithm.from_string not found in {path}; has the layout changed?")
    if tree.exists(registry):
        for node in tree.parse(registry).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "_RESERVED_ALIASES":
                names += [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and
                          isinstance(c.value, str)]
    return {"accepted": sorted(dict.fromkeys(names)), "source": [path, line], "case_sensitive": not upper,
            "plugins": [path, line]}


_OPT_RE = re.compile(r"add_opt\(common_arg\(\s*\{([^}]*)\}")
_NAME_RE = re.compile(r'"(-[^"]+)"')


def llamacpp_flags(root: Path) -> dict[str, Any]:
    """llama.cpp: the names of every `add_opt(common_arg({...}, ...))` in common/arg.cpp; an option whose
    handler calls `arg_removed(...)` is listed under `removed` with the replacement it names."""
    path = "common/arg.cpp"
    text = (root / path).read_text(encoding="utf-8")
    flags: Found = {}
    removed: dict[str, list[Any]] = {}
    starts = list(_OPT_RE.finditer(text))
    for i, m in enumerate(starts):
        line = text.count("\n", 0, m.start(1)) + 1
        body = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        gone = re.search(r'arg_removed\("([^"]*)"\)', body)
        names = _NAME_RE.findall(m.group(1))
        # a negated form (`{"--no-x"}`) follows as a second brace list: its names are flags too
        neg = re.match(r'\s*,\s*\{([^}]*)\}', body)
        if neg:
            names += _NAME_RE.findall(neg.group(1))
        for name in names:
            if gone:
                removed.setdefault(name, [path, line, gone.group(1)])
            else:
                flags.setdefault(name, [path, line])
    for must in ("-md", "--spec-type", "-ctkd", "-sm"):
        if must not in flags:
            raise LayoutError(f"llama.cpp: {must} not found in {path}; has the layout changed?")
    out = {"flags": dict(sorted(flags.items())), "removed": dict(sorted(removed.items())), "underscores": False}
    types = _llamacpp_spec_types(root)
    if types is not None:
        out["values"] = {"spec_type": types}
    return out


def _llamacpp_spec_types(root: Path) -> Optional[dict[str, Any]]:
    """`--spec-type`: a comma-separated list, each name looked up exactly in
    `common_speculative_type_from_name_map` (common/speculative.cpp); an unknown name throws."""
    path = "common/speculative.cpp"
    if not (root / path).is_file():
        return None
    text = (root / path).read_text(encoding="utf-8")
    m = re.search(r"common_speculative_type_from_name_map\s*=\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise LayoutError(f"llama.cpp: common_speculative_type_from_name_map not found in {path}")
    names = re.findall(r'\{\s*"([^"]+)"\s*,', m.group(1))
    return {"accepted": sorted(names), "source": [path, text.count("\n", 0, m.start()) + 1], "case_sensitive": True,
            "plugins": None, "separator": ","}


def extract(engine: str, source: Path) -> dict[str, Any]:
    if engine == "llama.cpp":
        return llamacpp_flags(source)
    tree = SourceTree.open(source)
    try:
        return {"vllm": vllm_flags, "sglang": sglang_flags}[engine](tree)
    finally:
        tree.close()


def main(argv: list[str]) -> int:
    """`ENGINE==VERSION=SOURCE ...`: (re)write those entries of data/launch_flags.json."""
    data = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
    engines = data.setdefault("engines", {})
    for spec in argv:
        name, _, rest = spec.partition("==")
        version, _, source = rest.partition("=")
        engines.setdefault(name, {})[version] = extract(name, Path(source))
        print(f"{name} {version}: {len(engines[name][version]['flags'])} flags", file=sys.stderr)
    out = {"about": ABOUT, "engines": {e: dict(sorted(v.items())) for e, v in sorted(engines.items())}}
    text = json.dumps(out, indent=1, sort_keys=False)
    # one line per flag: its [file, line(, note)] inline
    text = re.sub(r"\[\s+(\"[^\"]*\"),\s+(\d+)(?:,\s+(\"(?:[^\"\\\\]|\\\\.)*\"))?\s+\]",
                  lambda m: "[" + ", ".join(g for g in m.groups() if g is not None) + "]", text)
    DATA.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
