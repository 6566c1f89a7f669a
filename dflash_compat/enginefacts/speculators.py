"""speculators: the formats it registers, their default architectures, and its z-lab id conversion."""

from __future__ import annotations

import ast

from dflash_compat.enginefacts.facts import Section, require
from dflash_compat.enginefacts.pymod import string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["extract"]

MODELS = "speculators/models"
CONVERTER = "speculators/convert/dflash/converter.py"


def formats(tree: SourceTree) -> tuple[dict[str, Loc], dict[str, tuple[list[str], Loc]]]:
    """`@SpeculatorModelConfig.register("name")` config classes, and the `architectures` each
    defaults to."""
    found: dict[str, Loc] = {}
    archs: dict[str, tuple[list[str], Loc]] = {}
    for folder in tree.packages(MODELS):
        path = f"{folder}/config.py"
        if not tree.exists(path):
            continue
        for cls in (s for s in tree.parse(path).body if isinstance(s, ast.ClassDef)):
            for deco in cls.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                        and deco.func.attr == "register" and ast.unparse(deco.func.value) == "SpeculatorModelConfig"
                        and deco.args and (name := string_value(deco.args[0]))):
                    found[name] = Loc(path, deco.lineno, f"speculators_model_type {name!r}: {cls.name}")
                    default = _default_architectures(cls)
                    if default:
                        archs[name] = (default[0], Loc(path, default[1], f"{cls.name}.architectures default"))
    require(found, "speculators registered formats", anchor="dflash")
    if "dflash" not in found:
        raise LayoutError(f"{MODELS}: no `dflash` format registered")
    return found, archs


def _default_architectures(cls: ast.ClassDef):
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "architectures":
            names = [(s, n.lineno) for n in ast.walk(stmt.value or stmt) if (s := string_value(n)) is not None
                     and isinstance(n, ast.Constant) and _in_list(stmt.value, n)]
            if names:
                return [s for s, _ in names], names[0][1]
    return None


def _in_list(root, target) -> bool:
    return any(isinstance(n, ast.List) and target in n.elts for n in ast.walk(root))


def conversion(tree: SourceTree) -> dict[str, Loc]:
    """Where the z-lab -> speculators converter adds 1 to every id and drops the id equal to the
    verifier's layer count (a z-lab id of N-1)."""
    for node in ast.walk(tree.parse(CONVERTER)):
        if not (isinstance(node, ast.ListComp) and isinstance(node.elt, ast.BinOp)
                and isinstance(node.elt.op, ast.Add) and isinstance(node.elt.right, ast.Constant)
                and node.elt.right.value == 1):
            continue
        drops = [c for gen in node.generators for c in gen.ifs
                 if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.NotEq)]
        if drops:
            return {
                "aux_id_is_zlab_id_plus_one": Loc(CONVERTER, node.elt.lineno,
                                                  "aux_hidden_state_layer_ids = z-lab target_layer_ids + 1"),
                "converter_drops_last_layer_id": Loc(CONVERTER, drops[0].lineno,
                                                     "a z-lab id of N-1 (aux id N) is dropped: the last layer "
                                                     "is taken implicitly"),
            }
    raise LayoutError(f"{CONVERTER}: the `i + 1 for i in target_layer_ids if ...` conversion was not found")


def extract(tree: SourceTree) -> Section:
    sec = Section()
    sec.meta("source", "speculators: registered config formats (speculators/models/*/config.py) and the z-lab "
             "converter (speculators/convert/dflash/converter.py)")
    with sec.guard("formats", "format_architectures"):
        found, archs = formats(tree)
        sec.names("formats", found)
        sec.mapping("format_architectures", archs)
    with sec.guard("aux_id_is_zlab_id_plus_one", "converter_drops_last_layer_id"):
        for key, loc in conversion(tree).items():
            sec.where(key, loc)
    return sec
