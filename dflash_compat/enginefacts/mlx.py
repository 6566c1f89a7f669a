"""mlx-lm: the cache classes each model type's `make_cache` builds; dflash 0.1.0's MLX replay path."""

from __future__ import annotations

import ast
from typing import Callable, Optional

from dflash_compat.enginefacts.astutil import assigned, function, string_dict
from dflash_compat.enginefacts.facts import Section, Step, require
from dflash_compat.enginefacts.pymod import ClassRef, Modules, string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["MlxFacts", "extract", "replay_module"]

MODELS = "mlx_lm/models"
CACHE = "mlx_lm.models.cache"
CACHE_PATH = f"{MODELS}/cache.py"
UTILS = "mlx_lm/utils.py"
ROTATING = "RotatingKVCache"
DFLASH_MLX = "dflash/model_mlx.py"


class MlxFacts:
    """Per model type: the cache classes built and where; trimmability of each cache class."""

    def __init__(self, tree: SourceTree):
        self.tree = tree
        self.mods = Modules(tree)
        self.cache_classes = self._cache_classes()
        self.trimmable = {name: self._trimmable(ref) for name, ref in self.cache_classes.items()}
        self.default = self._default_cache()
        self.models = self._model_modules()

    # -- cache.py ---------------------------------------------------------------------------------

    def _cache_classes(self) -> dict[str, ClassRef]:
        base = self.mods.class_named(CACHE, "_BaseCache")
        if base is None:
            raise LayoutError(f"{CACHE_PATH}: class _BaseCache not found")
        out = {}
        for stmt in self.mods.module_body(CACHE):
            if isinstance(stmt, ast.ClassDef):
                ref = self.mods.class_named(CACHE, stmt.name)
                if ref is not None and ref != base and base in self.mods.mro(ref):
                    out[ref.name] = ref
        for needed in ("KVCache", ROTATING, "ArraysCache"):
            if needed not in out:
                raise LayoutError(f"{CACHE_PATH}: cache class {needed} not found")
        return out

    def _trimmable(self, ref: ClassRef) -> tuple[str, Loc]:
        """"always", "never" or "conditional", from the class's `is_trimmable` return value."""
        found = self.mods.find_member(ref, "is_trimmable")
        if found is None or not isinstance(found[1], ast.FunctionDef):
            raise LayoutError(f"{ref.path}: {ref.name} has no is_trimmable")
        owner, fn = found
        returns = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return)]
        kind = "conditional"
        if len(returns) == 1 and isinstance(returns[0], ast.Constant) and isinstance(returns[0].value, bool):
            kind = "always" if returns[0].value else "never"
        return kind, owner.loc(fn.lineno).with_(f"{ref.name}.is_trimmable")

    def _default_cache(self) -> tuple[list[str], Loc]:
        fn = function(self.mods.module_body(CACHE), "make_prompt_cache", CACHE_PATH)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "KVCache":
                return ["KVCache"], Loc(CACHE_PATH, node.lineno, "no make_cache: mlx-lm builds one KVCache per layer")
        raise LayoutError(f"{CACHE_PATH}: make_prompt_cache no longer builds a default KVCache")

    # -- models -----------------------------------------------------------------------------------

    def _model_modules(self) -> dict[str, tuple[str, Loc]]:
        """model_type -> (module, where the type is defined): each models/<type>.py with a Model and
        ModelArgs, plus utils.MODEL_REMAPPING's aliases."""
        out = {}
        for path in self.tree.files(MODELS):
            module = path[:-3].replace("/", ".")
            ref = self.mods.class_named(module, "Model")
            if ref is not None and self.mods.lookup(module, "ModelArgs") is not None:
                out[module.rsplit(".", 1)[1]] = (module, ref.loc().with_("mlx-lm model module"))
        require(out, "mlx-lm model modules", anchor="llama")
        remap = assigned(self.tree.parse(UTILS).body, "MODEL_REMAPPING", UTILS)
        for alias, value, line in string_dict(remap, f"{UTILS} MODEL_REMAPPING"):
            target = string_value(value)
            if target not in out:
                raise LayoutError(f"{UTILS}:{line}: MODEL_REMAPPING maps {alias} to unknown module {target}")
            out[alias] = (out[target][0], Loc(UTILS, line, f"remapped to {target}"))
        return out

    def caches_of(self, module: str) -> tuple[list[str], Loc, set[str]]:
        """The cache classes the model type builds, where, and the modules building a RotatingKVCache."""
        ref = self.mods.class_named(module, "Model")
        assert ref is not None
        found = self.mods.find_member(ref, "make_cache")
        if found is None:
            return self.default[0], self.default[1], set()
        owner, fn = found
        built = self._built(owner, fn, set())
        if not built:
            raise LayoutError(f"{owner.path}:{fn.lineno}: {owner.name}.make_cache builds no cache class known "
                              f"from {CACHE_PATH}")
        rotating = {m for name, m in built if name == ROTATING}
        return sorted({n for n, _ in built}), owner.loc(fn.lineno).with_(f"{owner.name}.make_cache"), rotating

    def _built(self, cls: ClassRef, fn: ast.AST, seen: set) -> set[tuple[str, str]]:
        """(cache class, module constructing it) for each cache built in fn, following self.<attr>.make_cache(),
        self.<method>() and module-level helper functions."""
        key = (cls.path, getattr(fn, "lineno", 0))
        if key in seen:
            return set()
        seen.add(key)
        out: set[tuple[str, str]] = set()
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            func = call.func
            ref = self.mods.resolve(cls.module, func)
            if isinstance(ref, ClassRef) and (name := self._cache_name(ref)):
                out.add((name, cls.module))
            elif isinstance(func, ast.Attribute) and func.attr == "make_cache":
                out |= self._delegated(cls, func.value, seen)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                member = self.mods.find_member(cls, func.attr)
                if member and isinstance(member[1], ast.FunctionDef):
                    out |= self._built(member[0], member[1], seen)
            elif isinstance(func, ast.Name):
                helper = _module_function(self.mods.module_body(cls.module), func.id)
                if helper is not None:
                    out |= self._built(cls, helper, seen)
        return out

    def _cache_name(self, ref: ClassRef) -> Optional[str]:
        """A cache class's name: bare for mlx-lm's own (cache.py), `module.Class` for a model's own
        cache class (any class with an is_trimmable method)."""
        if ref.module == CACHE and ref.name in self.cache_classes:
            return ref.name
        if self.mods.find_member(ref, "is_trimmable") is None:
            return None
        name = f"{ref.module.rsplit('.', 1)[1]}.{ref.name}"
        if name not in self.trimmable:
            self.trimmable[name] = self._trimmable(ref)
        return name

    def _delegated(self, cls: ClassRef, owner: ast.expr, seen: set) -> set[tuple[str, str]]:
        """`self.<attr>.make_cache()`: the class __init__ assigns to that attribute, then its caches."""
        if not (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self"):
            raise LayoutError(f"{cls.path}: make_cache delegates to {ast.unparse(owner)}, which is not self.<attr>")
        out: set[tuple[str, str]] = set()
        for target in self._attribute_classes(cls, owner.attr):
            found = self.mods.find_member(target, "make_cache")
            if found is None:
                out |= {(name, target.module) for name in self.default[0]}
            else:
                out |= self._built(found[0], found[1], seen)
        return out

    def _attribute_classes(self, cls: ClassRef, attr: str) -> list[ClassRef]:
        """Every class the class (or a base) assigns to self.<attr> (`if` branches give several)."""
        out = []
        for owner in self.mods.mro(cls):
            for node in ast.walk(owner.node):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                    and t.value.id == "self" for t in node.targets
                ):
                    ref = self.mods.resolve(owner.module, node.value.func)
                    if isinstance(ref, ClassRef) and ref not in out:
                        out.append(ref)
        if not out:
            raise LayoutError(f"{cls.path}: cannot tell which class self.{attr} of {cls.name} is")
        return out

    def rotating_needs_layer_types(self, module: str) -> bool:
        """Whether a model module makes sliding layers only from a config that lists them: its
        ModelArgs declares `layer_types = None` and the module never builds a list naming
        "sliding_attention" (it only compares with it), so the default is all full attention."""
        ref = self.mods.lookup(module, "ModelArgs")
        field_none = isinstance(ref, ClassRef) and any(
            isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "layer_types"
            and isinstance(stmt.value, ast.Constant) and stmt.value.value is None
            for cls in self.mods.mro(ref) for stmt in cls.node.body
        )
        return field_none and not _builds_sliding_default(self.mods.module_body(module))


def _builds_sliding_default(body: list[ast.stmt]) -> bool:
    """Whether "sliding_attention" appears anywhere but in a comparison or a `.index()` / `.count()`."""
    parents = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node, parent in parents.items():
        if string_value(node) != "sliding_attention":
            continue
        if isinstance(parent, ast.Compare):
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr in (
                "index", "count"):
            continue
        return True
    return False


def _module_function(body: list[ast.stmt], name: str) -> Optional[ast.FunctionDef]:
    return next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def replay_module(dflash: SourceTree) -> tuple[str, Loc]:
    """The mlx-lm module whose GatedDeltaNet dflash's MLX path replays (`from mlx_lm.models.X import
    GatedDeltaNet`)."""
    for node in ast.walk(dflash.parse(DFLASH_MLX)):
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mlx_lm.models.")
                and any(a.name == "GatedDeltaNet" for a in node.names)):
            return node.module, Loc(DFLASH_MLX, node.lineno, "dflash's MLX path replays this GatedDeltaNet")
    raise LayoutError(f"{DFLASH_MLX}: no GatedDeltaNet import from mlx_lm.models")


def _classify(facts: MlxFacts, caches: dict[str, tuple[list[str], Loc]], rotating_modules: dict[str, set[str]],
              replay: tuple[str, Loc]) -> tuple[dict[str, Loc], dict[str, Loc], dict[str, Loc], dict[str, Loc]]:
    """(replayed, non-trimmable, rotating, rotating only where layer_types says so) model types."""
    never = {n for n, (kind, _) in facts.trimmable.items() if kind == "never" and n != "CacheList"}
    replay_mod, replay_loc = replay
    replay_ref = facts.mods.class_named(replay_mod, "Model")
    if replay_ref is None:
        raise LayoutError(f"{replay_mod}: no Model class")
    replayed, recurrent, rotating, rotating_lt = {}, {}, {}, {}
    for model_type, (module, _where) in facts.models.items():
        names, loc = caches[model_type]
        model = facts.mods.class_named(module, "Model")
        if set(names) & never:
            recurrent[model_type] = loc.with_(f"builds {', '.join(sorted(set(names) & never))}")
            if replay_ref in facts.mods.mro(model):
                replayed[model_type] = loc.with_(f"its Model is {replay_mod}.Model; replayed per {replay_loc}")
        if ROTATING in names:
            needs = all(facts.rotating_needs_layer_types(m) for m in rotating_modules[model_type])
            which = rotating_lt if needs else rotating
            which[model_type] = loc.with_(f"builds {ROTATING}" + (" for layers config.layer_types marks sliding"
                                                                   if needs else ""))
    return replayed, recurrent, rotating, rotating_lt


def extract(tree: SourceTree, dflash: SourceTree,
            text_types: Callable[[str], dict[str, Loc]] = lambda model_type: {}) -> Section:
    """`text_types(model_type)`: the `text_config.model_type` values of that family's config.json
    (from transformers), so that a wrapper checkpoint's text model type is listed with it. Each fact is
    read on its own: one the reader cannot find at this release is recorded unknown with why."""
    facts = Step(lambda: MlxFacts(tree))

    def read_caches():
        caches: dict[str, tuple[list[str], Loc]] = {}
        rotating_modules: dict[str, set[str]] = {}
        for model_type, (module, where) in sorted(facts().models.items()):
            names, loc, rotating_modules[model_type] = facts().caches_of(module)
            caches[model_type] = (names, loc if where.file != UTILS else where.with_(f"{where.note}; {loc}"))
        return caches, rotating_modules

    cache_step = Step(read_caches)
    replay_step = Step(lambda: replay_module(dflash))
    kinds = Step(lambda: _classify(facts(), *cache_step(), replay_step()))
    sec = Section()
    sec.meta("source", "mlx-lm: the cache classes each model type's make_cache builds (models/*.py), and "
             "dflash's MLX path (dflash/model_mlx.py)")
    with sec.guard("cache_classes"):
        sec.mapping("cache_classes", cache_step()[0])
    with sec.guard("cache_trimmable"):
        sec.mapping("cache_trimmable", {n: facts().trimmable[n] for n in sorted(facts().trimmable)})
    with sec.guard("non_trimmable_model_types"):
        recurrent = kinds()[1]
        require(recurrent, "mlx-lm model types with non-trimmable caches")
        sec.names("non_trimmable_model_types", recurrent)
    with sec.guard("replay_model_types"):
        replay = dict(kinds()[0])
        require(replay, "mlx-lm model types replayed by dflash's MLX path", anchor="qwen3_5")
        for model_type in sorted(replay):
            for text_type, loc in text_types(model_type).items():
                replay.setdefault(text_type, loc.with_(f"the text model of {model_type}, replayed with it"))
        sec.names("replay_model_types", replay)
    with sec.guard("rotating_kv_cache_model_types"):
        rotating = kinds()[2]
        require(rotating, f"mlx-lm model types building {ROTATING}")
        sec.names("rotating_kv_cache_model_types", rotating)
    with sec.guard("rotating_when_layer_types_sliding"):
        sec.names("rotating_when_layer_types_sliding", kinds()[3])
    with sec.guard("replay_module"):
        sec.where("replay_module", replay_step()[1], replay_step()[0])
    return sec
