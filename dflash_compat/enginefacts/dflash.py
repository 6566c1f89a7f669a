"""dflash 0.1.0 (the reference): which draft config keys its torch and MLX loaders read, and where."""

from __future__ import annotations

import ast

from dflash_compat.enginefacts.astutil import function
from dflash_compat.enginefacts.facts import Section, require
from dflash_compat.enginefacts.pymod import string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["extract"]

TORCH = "dflash/model.py"
MLX = "dflash/model_mlx.py"
NESTED_HELPER = "_draft_value"  # dflash_config.<key>, else the top-level key


def torch_keys(tree: SourceTree) -> dict[str, tuple[str, Loc]]:
    """Keys the PyTorch draft reads: `_draft_value(config, "k")` (nested, else top level),
    `config.k` / `getattr(config, "k")` (top level)."""
    out: dict[str, tuple[str, Loc]] = {}
    module = tree.parse(TORCH)
    function(module.body, NESTED_HELPER, TORCH)
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            key = string_value(node.args[1])
            if node.func.id == NESTED_HELPER and key:
                out.setdefault(f"dflash_config.{key}", ("dflash_config, else top level",
                                                        Loc(TORCH, node.lineno, f"dflash_config.{key} or {key}")))
            elif node.func.id == "getattr" and key and _is_config(node.args[0]):
                out.setdefault(key, ("top level, optional", Loc(TORCH, node.lineno)))
        elif isinstance(node, ast.Attribute) and _is_config(node.value) and isinstance(node.ctx, ast.Load):
            out.setdefault(node.attr, ("top level", Loc(TORCH, node.lineno)))
    calls = {n.func for n in ast.walk(module) if isinstance(n, ast.Call)}
    out = {k: v for k, v in out.items() if not any(isinstance(f, ast.Attribute) and f.attr == k for f in calls)}
    require(out, f"{TORCH} draft config keys", anchor="dflash_config.target_layer_ids")
    return out


def _is_config(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "config") or (
        isinstance(node, ast.Attribute) and node.attr == "config")


def mlx_keys(tree: SourceTree) -> dict[str, tuple[str, Loc]]:
    """Keys `load_draft` reads from config.json: `cfg["k"]` required, `cfg.get("k")` optional, and
    the same through local aliases of sub-dicts (`dflash = cfg.get("dflash_config", {})`)."""
    fn = function(tree.parse(MLX).body, "load_draft", MLX)
    aliases: dict[str, str] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            keys = [string_value(c.args[0]) for c in ast.walk(node.value) if _is_get(c, "cfg") and c.args]
            if keys and all(keys):
                aliases[node.targets[0].id] = "|".join(keys)
    out: dict[str, tuple[str, Loc]] = {}
    for node in ast.walk(fn):
        base, key, how = None, None, None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            base, key, how = node.value.id, string_value(node.slice), "required"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args):
            owner = node.func.value
            owner = owner.values[0] if isinstance(owner, ast.BoolOp) else owner
            base = owner.id if isinstance(owner, ast.Name) else None
            key, how = string_value(node.args[0]), "optional"
        if key is None or base is None or (base != "cfg" and base not in aliases):
            continue
        name = key if base == "cfg" else f"{aliases[base]}.{key}"
        if base == "cfg" and key in aliases.values():
            continue  # the sub-dict itself, reported through its keys
        prev = out.get(name)
        if prev is None or (how == "required" and prev[0] != "required"):
            out[name] = (how, Loc(MLX, node.lineno))
    require(out, f"{MLX} load_draft config keys", anchor="dflash_config.target_layer_ids")
    return out


def _is_get(node: ast.AST, base: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == base)


def draft_architectures(tree: SourceTree) -> dict[str, Loc]:
    """Architecture names the loaders branch on, and the draft classes the package exports."""
    out: dict[str, Loc] = {}
    for path in (TORCH, MLX):
        for node in ast.walk(tree.parse(path)):
            if isinstance(node, ast.ClassDef) and node.name.endswith("DraftModel"):
                out.setdefault(node.name, Loc(path, node.lineno, f"{path}: class {node.name}"))
    for node in ast.walk(tree.parse(MLX)):
        if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) and (s := string_value(node.left))
                and "architectures" in ast.unparse(node.comparators[0])):
            out[s] = Loc(MLX, node.lineno, f"the MLX loader picks its {s} class by `architectures`")
    if "DFlashDraftModel" not in out:
        raise LayoutError(f"{TORCH}: class DFlashDraftModel not found")
    return out


def extract(tree: SourceTree) -> Section:
    sec = Section()
    sec.meta("source", "dflash (the reference): draft config keys its PyTorch (dflash/model.py) and MLX "
             "(dflash/model_mlx.py load_draft) loaders read")
    with sec.guard("draft_architectures"):
        sec.names("draft_architectures", draft_architectures(tree))
    with sec.guard("torch_config_keys"):
        sec.mapping("torch_config_keys", torch_keys(tree))
    with sec.guard("mlx_config_keys"):
        sec.mapping("mlx_config_keys", mlx_keys(tree))
    return sec
