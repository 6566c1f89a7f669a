"""vLLM: target classes with the EAGLE-3 aux-hidden-state interface, DFlash draft architectures, runners."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from dflash_compat.enginefacts.anchors import code_features
from dflash_compat.enginefacts.astutil import assigned, calls_to, function, method, string_dict, string_set
from dflash_compat.enginefacts.delegation import Unresolved, classes_of_call, own_method, self_attr
from dflash_compat.enginefacts.facts import Section, Step, require
from dflash_compat.enginefacts.pymod import ClassRef, Modules, string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["extract"]

REGISTRY = "vllm/model_executor/models/registry.py"
INTERFACES = "vllm.model_executor.models.interfaces"
# Registry dicts whose classes can be a DFlash target; the others hold pooling models, drafts and the
# bare transformers-backend entry points.
TARGET_DICTS = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS")
DRAFT_DICT = "_SPECULATIVE_DECODING_MODELS"
BACKEND_DICT = "_TRANSFORMERS_BACKEND_MODELS"
ALL_DICT = "_VLLM_MODELS"
EAGLE_CONFIG = "vllm/transformers_utils/configs/eagle.py"
VLLM_CONFIG = "vllm/config/vllm.py"
SPEC_CONFIG = "vllm/config/speculative.py"
V2_DISPATCH = "vllm/v1/worker/gpu/spec_decode/__init__.py"
V1_RUNNER = "vllm/v1/worker/gpu_model_runner.py"
V2_EAGLE3 = "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"
SPECULATORS = "vllm/transformers_utils/configs/speculators/algos.py"
MIXIN = "EagleModelMixin"  # what set_aux_hidden_state_layers asserts the language-model body is
LM_MARK = "_mark_language_model"
SET_AUX = "set_aux_hidden_state_layers"
PP_FLAG = "supports_aux_hidden_states_over_pp"
REGISTERED = ("init_vllm_registered_model", "initialize_model")  # build a registry class by name


@dataclass(frozen=True)
class Entry:
    arch: str
    module: str  # dotted, resolved as vLLM resolves it
    cls: str
    loc: Loc


def _module_prefix(body: list[ast.stmt]) -> str:
    """The package vLLM puts in front of a relative registry module name (`_resolve_module_name`; before it
    existed, e.g. 0.20.0, the `module_name=f"..."` the ModelRegistry builds each lazy entry with)."""
    if any(isinstance(s, ast.FunctionDef) and s.name == "_resolve_module_name" for s in body):
        scope: ast.AST = function(body, "_resolve_module_name", REGISTRY)
    else:
        kws = [k.value for k in ast.walk(ast.Module(body=body, type_ignores=[]))
               if isinstance(k, ast.keyword) and k.arg == "module_name" and isinstance(k.value, ast.JoinedStr)]
        if len(kws) != 1:
            raise LayoutError(f"{REGISTRY}: no `_resolve_module_name` (nor one `module_name=f\"...\"`)")
        scope = kws[0]
    for node in ast.walk(scope):
        if isinstance(node, ast.JoinedStr) and node.values and (s := string_value(node.values[0])):
            return s
    raise LayoutError(f"{REGISTRY}: _resolve_module_name no longer builds an f-string module name")


def read_registry(tree: SourceTree) -> dict[str, list[Entry]]:
    body = tree.parse(REGISTRY).body
    prefix = _module_prefix(body)
    spread = assigned(body, ALL_DICT, REGISTRY)
    parts = [v.id for k, v in zip(spread.keys, spread.values) if k is None and isinstance(v, ast.Name)] if isinstance(
        spread, ast.Dict) else []
    out: dict[str, list[Entry]] = {}
    for name in (*TARGET_DICTS, DRAFT_DICT, BACKEND_DICT):
        if name not in parts:
            raise LayoutError(f"{REGISTRY}: {ALL_DICT} no longer includes {name}")
        entries = []
        for arch, value, line in string_dict(assigned(body, name, REGISTRY), f"{REGISTRY} {name}"):
            pair = [string_value(e) for e in value.elts] if isinstance(value, ast.Tuple) else []
            if len(pair) != 2 or None in pair:
                raise LayoutError(f"{REGISTRY}:{line}: {arch} is not a (module, class) pair")
            module = pair[0] if pair[0].startswith("vllm.") else prefix + pair[0]
            entries.append(Entry(arch, module, pair[1], Loc(REGISTRY, line)))
        require(entries, f"vLLM registry {name}")
        out[name] = entries
    return out


def _interface(mods: Modules) -> ClassRef:
    ref = mods.class_named(INTERFACES, "SupportsEagle3")
    if ref is None:
        raise LayoutError(f"{INTERFACES}: class SupportsEagle3 not found")
    return ref


def _mixin(mods: Modules) -> ClassRef:
    ref = mods.class_named(INTERFACES, MIXIN)
    if ref is None:
        raise LayoutError(f"{INTERFACES}: class {MIXIN} not found")
    return ref


def _first_self_attr(targets: list[ast.expr]) -> Optional[str]:
    return next((a for t in targets if (a := self_attr(t)) is not None), None)


def _assignments(mods: Modules, ref: ClassRef, attr: str, marked: bool = False):
    """(class, __init__, call) for each `self.<attr> = X(...)` in the first `__init__` of the MRO that
    assigns it; with `marked`, the attribute is the first one assigned inside `with
    self._mark_language_model(...)` instead (what get_language_model() returns)."""
    for cls in mods.mro(ref):
        init = own_method(cls, "__init__")
        if init is None:
            continue
        scopes = [init]
        if marked:
            scopes = [ast.Module(body=n.body, type_ignores=[]) for n in ast.walk(init) if isinstance(n, ast.With)
                      and any(isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Attribute)
                              and i.context_expr.func.attr == LM_MARK for i in n.items)]
        calls = sorted(((a, n) for scope in scopes for n in ast.walk(scope)
                        if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Call)
                        for a in [_first_self_attr(n.targets if isinstance(n, ast.Assign) else [n.target])]
                        if a is not None), key=lambda an: an[1].lineno)
        if marked and calls:  # `language_model` if the block builds one, else the first module it builds
            attr = "language_model" if any(a == "language_model" for a, _ in calls) else calls[0][0]
        found = [(cls, init, n.value) for a, n in calls if a == attr]
        if found:
            return attr, found
    return attr, []


def _call_classes(mods: Modules, ref: ClassRef, cls: ClassRef, init: ast.FunctionDef, call: ast.Call,
                  by_arch: dict[str, ClassRef]) -> Optional[list[ClassRef]]:
    """The classes a constructor call may build. vLLM's registry builders (`init_vllm_registered_model`,
    `initialize_model`) are looked up by the literal architecture list in the call; without one the
    class comes from the checkpoint's config at run time: None (not decided statically)."""
    if isinstance(call.func, ast.Name) and call.func.id in REGISTERED:
        for node in ast.walk(call):
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
                names = [string_value(e) for e in node.elts]
                if all(n in by_arch for n in names):
                    return [by_arch[n] for n in names]
        return None
    return classes_of_call(mods, ref, call.func, (cls, init))


def aux_holders(mods: Modules, ref: ClassRef, by_arch: dict[str, ClassRef]) -> Optional[list[tuple[ClassRef, ClassRef,
                                                                                            Optional[ast.Call]]]]:
    """The classes that can be the language-model body vLLM takes aux hidden states from (what
    set_aux_hidden_state_layers and the V2 runner's `_inner_decoder` read): the language model (the
    module marked by `_mark_language_model`, else `self.language_model`, else `self`), then its
    `.model` when it has one. Each as (class that assigns it, body class, the assigning call); None
    when the text model is chosen by the checkpoint at run time (not decided statically)."""
    _, marked = _assignments(mods, ref, "", marked=True)
    if not marked:  # get_language_model()'s fallback: the child that is a language model
        _, marked = _assignments(mods, ref, "language_model")
    lms: list[ClassRef] = []
    for c, init, call in marked:
        found = _call_classes(mods, ref, c, init, call, by_arch)
        if found is None:
            return None
        lms += found
    out = []
    for lm in lms if marked else [ref]:
        _, bodies = _assignments(mods, lm, "model")
        if not bodies:
            out.append((lm, lm, None))
        for c, init, call in bodies:
            found = _call_classes(mods, lm, c, init, call, by_arch)
            if found is None:
                return None
            out += [(c, h, call) for h in found]
    return out


def aux_holder_gap(mods: Modules, ref: ClassRef, holders) -> Optional[tuple[Loc, ClassRef]]:
    """Where SupportsEagle3.set_aux_hidden_state_layers (when `ref` does not override it) would fail:
    it asserts the body (`aux_holders`) is an EagleModelMixin. None when every class that can sit
    there is one; (location of the assignment, the class) for the first that is not."""
    own = mods.find_member(ref, SET_AUX)
    if holders is None or own is None or own[0] != _interface(mods):  # its own method: no assertion
        return None
    mixin = _mixin(mods)
    for owner, holder, call in holders:
        if mods.declares_base(holder, mixin) is None:
            return owner.loc(call.lineno if call is not None else None), holder
    return None


def over_pp(mods: Modules, holders) -> Optional[tuple[bool, Loc]]:
    """Whether every body sets `supports_aux_hidden_states_over_pp = True` (what the V2 runner
    requires at pipeline parallelism > 1), with where it is set (or the body class when it is not)."""
    if not holders:
        return None
    for _, holder, _ in holders:
        found = mods.find_member(holder, PP_FLAG)
        value = found[1].value if found and isinstance(found[1], (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, ast.Constant) and value.value is True):
            return False, holder.loc().with_(f"{holder.name} does not set {PP_FLAG} = True")
    owner, stmt = mods.find_member(holders[0][1], PP_FLAG)
    return True, owner.loc(stmt.lineno).with_(f"{holders[0][1].name}: {PP_FLAG} = True")


def _assertion(tree: SourceTree) -> Loc:
    path = INTERFACES.replace(".", "/") + ".py"
    for node in ast.walk(tree.parse(path)):
        if (isinstance(node, ast.Assert) and isinstance(node.test, ast.Call) and isinstance(node.test.func, ast.Name)
                and node.test.func.id == "isinstance" and len(node.test.args) == 2
                and isinstance(node.test.args[1], ast.Name) and node.test.args[1].id == MIXIN):
            return Loc(path, node.lineno, f"{SET_AUX}: the language-model body must be an {MIXIN}")
    raise LayoutError(f"{path}: the {MIXIN} assertion in {SET_AUX} was not found")


def _pp_check(tree: SourceTree) -> Loc:
    fn = function(tree.parse(V2_EAGLE3).body, "verify_supports_aux_hidden_states_over_pp", V2_EAGLE3)
    raises = [n for n in ast.walk(fn) if isinstance(n, ast.Raise)]
    if not any(isinstance(n, ast.Attribute) and n.attr == PP_FLAG or string_value(n) == PP_FLAG
               for n in ast.walk(fn)) or not raises:
        raise LayoutError(f"{V2_EAGLE3}: verify_supports_aux_hidden_states_over_pp no longer checks {PP_FLAG}")
    return Loc(V2_EAGLE3, fn.lineno, f"V2 model runner, pipeline parallelism > 1: the target's inner decoder must set "
               f"{PP_FLAG}, else ValueError")


def eagle3_targets(mods: Modules, registry: dict[str, list[Entry]]):
    """(supported, unsupported, body_not_mixin): registry names by whether their class has SupportsEagle3
    and a language-model body that is an EagleModelMixin."""
    iface = _interface(mods)
    supported: dict[str, Loc] = {}
    unsupported: dict[str, Loc] = {}
    body_gaps: dict[str, tuple[str, Loc]] = {}
    pp_flags: dict[str, tuple[bool, Loc]] = {}
    unresolved: list[str] = []
    by_arch = {}
    for entries in registry.values():
        for e in entries:
            if (c := mods.class_named(e.module, e.cls)) is not None:
                by_arch.setdefault(e.arch, c)
    for dict_name in TARGET_DICTS:
        for e in registry[dict_name]:
            ref = mods.class_named(e.module, e.cls)
            if ref is None:
                unresolved.append(f"{e.arch} -> {e.module}.{e.cls} ({e.loc})")
                continue
            found = mods.declares_base(ref, iface)
            cls = f"{ref.path}:{ref.node.lineno}"
            gap = None
            if found:
                own = mods.find_member(ref, SET_AUX)
                try:
                    holders = aux_holders(mods, ref, by_arch)
                except Unresolved as exc:
                    if own and own[0] != iface:  # its own set_aux_hidden_state_layers (the transformers backend)
                        holders = None
                    else:
                        unresolved.append(f"{e.arch}: the language-model body at {exc}")
                        continue
                gap = aux_holder_gap(mods, ref, holders)
                pp = over_pp(mods, holders)
                if pp is not None:
                    pp_flags[e.arch] = (pp[0], pp[1].with_(registry=str(e.loc)))
            if found and gap is not None:
                where, holder = gap
                loc = where.with_(
                    f"{ref.name} implements SupportsEagle3 but its language-model body {holder.name} "
                    f"({holder.path}:{holder.node.lineno}) is not an {MIXIN}: set_aux_hidden_state_layers "
                    f"fails its assertion", registry=str(e.loc))
                body_gaps[e.arch] = (holder.name, loc)
                unsupported[e.arch] = loc
            elif found:
                owner, expr = found
                supported[e.arch] = owner.loc(expr.lineno).with_(
                    f"{ref.name} implements SupportsEagle3" + (f" (through {owner.name})" if owner != ref else ""),
                    registry=str(e.loc), cls=cls)
            else:
                unsupported[e.arch] = ref.loc().with_(f"{ref.name} does not implement SupportsEagle3",
                                                      registry=str(e.loc))
    if unresolved:
        raise LayoutError("vLLM registry classes not found in the sources: " + "; ".join(unresolved))
    require(supported, "vLLM target classes implementing SupportsEagle3", anchor="LlamaForCausalLM")
    require(unsupported, "vLLM target classes without SupportsEagle3")
    return supported, unsupported, body_gaps, pp_flags


@dataclass(frozen=True)
class Rename:
    """EAGLEConfig's dflash rule: an architecture is kept when it starts/ends with one of these
    strings or equals one of `keep`; otherwise `prefix` is put in front."""

    prefix: str
    starts: tuple[str, ...]
    ends: tuple[str, ...]
    keep: tuple[str, ...]
    loc: Loc

    def apply(self, arch: str) -> str:
        if arch.startswith(self.starts) or arch.endswith(self.ends) or arch in self.keep:
            return arch
        return self.prefix + arch


def dflash_rename(tree: SourceTree) -> Rename:
    body = tree.parse(EAGLE_CONFIG)
    for node in ast.walk(body):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and [string_value(c) for c in node.test.comparators] == ["dflash"]):
            continue
        for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(sub, ast.ListComp) and isinstance(sub.elt, ast.IfExp):
                return _rename_from(sub.elt, sub.lineno)
    raise LayoutError(f"{EAGLE_CONFIG}: the `method == \"dflash\"` architecture rename was not found")


def _rename_from(expr: ast.IfExp, line: int) -> Rename:
    starts, ends, keep = [], [], []
    for sub in ast.walk(expr.test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.args:
            text = string_value(sub.args[0])
            if text is not None and sub.func.attr == "startswith":
                starts.append(text)
            elif text is not None and sub.func.attr == "endswith":
                ends.append(text)
        elif isinstance(sub, ast.Compare) and isinstance(sub.ops[0], ast.Eq):
            keep += [s for c in sub.comparators if (s := string_value(c)) is not None]
    prefix = None
    if isinstance(expr.orelse, ast.JoinedStr) and expr.orelse.values:
        prefix = string_value(expr.orelse.values[0])
    if not prefix or not starts:
        raise LayoutError(f"{EAGLE_CONFIG}:{line}: the dflash rename changed shape")
    return Rename(prefix, tuple(starts), tuple(ends), tuple(keep), Loc(EAGLE_CONFIG, line))


def dflash_drafts(registry: dict[str, list[Entry]], rename: Rename) -> dict[str, tuple[str, Loc]]:
    """Draft names vLLM serves under method "dflash" (those whose renamed form is a registry key),
    mapped to the `module.Class` it loads."""
    keys = {e.arch: e for entries in registry.values() for e in entries}
    out = {}
    for name in sorted(keys):  # a name no registry entry spells is not a name a published draft uses
        entry = keys.get(rename.apply(name))
        if entry is None:
            continue
        how = "registered" if entry.arch == name else f"renamed to {entry.arch} by EAGLEConfig ({rename.loc})"
        out[name] = (f"{entry.module}.{entry.cls}", entry.loc.with_(f"{how}; loads {entry.cls}"))
    require(out, "vLLM DFlash draft architectures", anchor="DFlashDraftModel")
    return out


def v1_refused(tree: SourceTree) -> dict[str, Loc]:
    """Draft names the V1 model runner refuses: candidate-head drafts and XPress refiners."""
    body = tree.parse(VLLM_CONFIG).body
    cand = method(body, None, "_is_dflash_candidate_draft", VLLM_CONFIG)
    v1 = method(body, None, "_get_v1_model_runner_unsupported_features", VLLM_CONFIG)
    found: dict[str, Loc] = {}
    checks = [("candidate-head draft", "_is_dflash_candidate_draft",
               [s for node in ast.walk(cand) if isinstance(node, ast.Set) for s in string_set(node)])]
    if "XPRESS_ARCHITECTURES" in tree.read(SPEC_CONFIG):  # XPress drafts arrived in 0.33
        checks.append(("XPress refiner draft", "is_xpress", _xpress(tree)))
    for reason, check, names in checks:
        calls = calls_to(v1, check)
        if not calls or not names:
            raise LayoutError(f"{VLLM_CONFIG}: the V1 runner's {reason} refusal ({check}) was not found")
        for name, _ in names:
            found[name] = Loc(VLLM_CONFIG, calls[0].lineno, f"the V1 model runner refuses it ({reason})")
    return found


def _xpress(tree: SourceTree) -> list[tuple[str, int]]:
    names = string_set(assigned(tree.parse(SPEC_CONFIG).body, "XPRESS_ARCHITECTURES", SPEC_CONFIG))
    require(names, f"{SPEC_CONFIG} XPRESS_ARCHITECTURES")
    return names


def v2_speculators(tree: SourceTree, mods: Modules, drafts: dict, rename: Rename) -> dict[str, tuple[str, Loc]]:
    """The V2 runner's speculator class for each DFlash draft name (init_speculator's dispatch)."""
    fn = function(tree.parse(V2_DISPATCH).body, "init_speculator", V2_DISPATCH)
    branch = next((n for n in ast.walk(fn) if isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
                   and [string_value(c) for c in n.test.comparators] == ["dflash"]), None)
    if branch is None:
        raise LayoutError(f"{V2_DISPATCH}: init_speculator has no `method == \"dflash\"` branch")
    rules: list[tuple[set[str], str, int]] = []
    default = None
    for stmt in branch.body:
        if isinstance(stmt, ast.If):
            rules.append((_names_in_test(mods, stmt.test), _imported_class(stmt.body), stmt.lineno))
        elif isinstance(stmt, ast.ImportFrom):
            default = (stmt.names[0].name, stmt.lineno)
    if default is None or not rules or any(not names or not cls for names, cls, _ in rules):
        raise LayoutError(f"{V2_DISPATCH}:{branch.lineno}: the dflash speculator dispatch changed shape")
    out = {}
    for name in drafts:
        seen = {name, rename.apply(name)}
        cls, line = next(((c, ln) for names, c, ln in rules if names & seen), default)
        out[name] = (cls, Loc(V2_DISPATCH, line, f"V2 model runner drafts with {cls}"))
    return out


def _names_in_test(mods: Modules, test: ast.expr) -> set[str]:
    names = {s for node in ast.walk(test) if (s := string_value(node)) is not None}
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and node.id.isupper():
            ref_mod = _constant_module(mods, V2_DISPATCH, node.id)
            names |= {s for s, _ in string_set(assigned(mods.module_body(ref_mod), node.id, ref_mod))}
    return names


def _constant_module(mods: Modules, path: str, name: str) -> str:
    """The module a module-level constant imported into `path` comes from."""
    for stmt in mods.tree.parse(path).body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == name for a in stmt.names):
            return stmt.module or ""
    raise LayoutError(f"{path}: constant {name} is not imported by name")


def _imported_class(body: list[ast.stmt]) -> str:
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.names:
            return stmt.names[0].name
    return ""


def interface_checks(tree: SourceTree) -> dict[str, Loc]:
    out = {}
    for key, path, runner in (("eagle3_interface_v1", V1_RUNNER, "V1"), ("eagle3_interface_v2", V2_EAGLE3, "V2")):
        calls = calls_to(tree.parse(path), "supports_eagle3")
        if not calls:
            raise LayoutError(f"{path}: the {runner} runner no longer checks supports_eagle3")
        out[key] = Loc(path, calls[0].lineno, f"{runner} model runner: the target must implement SupportsEagle3")
    return out


def speculators_formats(tree: SourceTree) -> tuple[dict[str, Loc], Loc]:
    """speculators config formats vLLM converts (`@register_speculator("name")`), and where its
    dflash reader turns aux_hidden_state_layer_ids back into z-lab ids (`i - 1`)."""
    body = tree.parse(SPECULATORS).body
    found = {}
    for fn in (s for s in body if isinstance(s, ast.FunctionDef)):
        for deco in fn.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "register_speculator"
                    and deco.args and (name := string_value(deco.args[0]))):
                found[name] = Loc(SPECULATORS, deco.lineno, f"vLLM reads speculators_model_type {name!r} ({fn.name})")
    if "dflash" not in found:
        raise LayoutError(f"{SPECULATORS}: no register_speculator(\"dflash\")")
    dflash_fn = function(body, "update_dflash", SPECULATORS)
    minus = [n for n in ast.walk(dflash_fn) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
             and isinstance(n.right, ast.Constant) and n.right.value == 1]
    if not minus:
        raise LayoutError(f"{SPECULATORS}: update_dflash no longer subtracts 1 from the aux layer ids")
    return found, Loc(SPECULATORS, minus[0].lineno, "speculators dflash: dflash_config.target_layer_ids = "
                      "aux_hidden_state_layer_ids - 1 (the aux ids also become eagle_aux_hidden_state_layer_ids)")


# Features whose presence changes what a rule says; each present feature is located by an anchor
# (a file plus the class or function it must define). Absent at a version: not in `features`.
FEATURES = {
    "v1_dflash_proposer": ("vllm/v1/spec_decode/dflash.py", "DFlashProposer",
                           "the V1 runner's DFlash proposer (vllm/v1/spec_decode)"),
    "v1_llm_base_proposer": ("vllm/v1/spec_decode/llm_base_proposer.py", "",
                             "the V1 runner's shared proposer base"),
}
CODE_FEATURES = {
    "v2_dflash_dispatch": (V2_DISPATCH, '== "dflash"', "init_speculator picks the DFlash speculator by method"),
    "speculator_config_classes": ("vllm/v1/worker/gpu/spec_decode/speculator_config.py", "speculator_class",
                                  "each method's settings class names its speculator"),
}
SPEC_CONFIG_DIR = "vllm/v1/worker/gpu/spec_decode"


def features(tree: SourceTree) -> dict[str, Loc]:
    found = {}
    for name, (path, symbol, note) in FEATURES.items():
        if not tree.exists(path):
            continue
        body = tree.parse(path).body
        if not symbol:
            found[name] = Loc(path, 1, note)
            continue
        node = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == symbol), None)
        if node is not None:
            found[name] = Loc(path, node.lineno, note)
    return found


DEFAULT_SPECULATOR_CONFIG = ("vllm.v1.worker.gpu.spec_decode.dflash.config", "DFlashSpeculatorConfig")


def declared_speculators(mods: Modules, drafts: dict) -> dict[str, tuple[str, Loc]]:
    """The speculator each DFlash draft runs with where the draft class declares
    `speculator_config_class` (default: the dflash method's settings class) and that class names
    `speculator_class` (a dotted path)."""
    default = mods.class_named(*DEFAULT_SPECULATOR_CONFIG)
    if default is None:
        raise LayoutError(f"{'.'.join(DEFAULT_SPECULATOR_CONFIG)} not found")
    out = {}
    for name, (dotted, _) in drafts.items():
        module, _, cls = dotted.rpartition(".")
        ref = mods.class_named(module, cls)
        if ref is None:
            raise LayoutError(f"draft class {dotted} not found")
        member = mods.find_member(ref, "speculator_config_class")
        config, where = default, None
        if member is not None and isinstance(member[1], ast.Assign):
            got = mods.resolve(member[0].module, member[1].value)
            if not isinstance(got, ClassRef):
                raise LayoutError(f"{dotted}: speculator_config_class is not a class")
            config, where = got, member[0].loc(member[1].lineno)
        spec = mods.find_member(config, "speculator_class")
        value = string_value(spec[1].value) if spec and isinstance(spec[1], ast.Assign) else None
        if value is None and spec and isinstance(spec[1], ast.Assign) and isinstance(spec[1].value, ast.JoinedStr):
            value = None
        if value is None:
            raise LayoutError(f"{config.qualname}: no speculator_class string")
        speculator = value.rsplit(".", 1)[1]
        loc = (where or spec[0].loc(spec[1].lineno)).with_(f"V2 model runner drafts with {speculator}")
        out[name] = (speculator, loc)
    return out


def method_config_modules(tree: SourceTree) -> dict[str, Loc]:
    """Per-method settings modules of the V2 runner (`spec_decode/<method>/config.py`), where present."""
    found = {}
    for pkg in tree.packages(SPEC_CONFIG_DIR):
        path = f"{pkg}/config.py"
        if tree.exists(path):
            body = tree.parse(path).body
            first = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef))), None)
            found[pkg.rsplit("/", 1)[1]] = Loc(path, first.lineno if first else 1, "the method's settings module")
    return found


def extract(tree: SourceTree) -> Section:
    """Each fact is read on its own: one the reader cannot find at this release (or whose step, such as the
    registry, fails) is recorded unknown with why, and the others are still read."""
    mods = Modules(tree)
    registry = Step(lambda: read_registry(tree))
    targets = Step(lambda: eagle3_targets(mods, registry()))
    rename = Step(lambda: dflash_rename(tree))
    drafts = Step(lambda: dflash_drafts(registry(), rename()))
    feats = Step(lambda: {**features(tree), **code_features(tree, CODE_FEATURES)})
    sec = Section()
    sec.meta("source", "vLLM: registry target classes implementing SupportsEagle3 (the EAGLE-3 aux-hidden-state "
             "interface DFlash uses), read from vllm/model_executor/models/registry.py and the model sources")
    sec.meta("interface", "SupportsEagle3")
    with sec.guard("supported", "unsupported", "aux_body_not_mixin", "aux_over_pp"):
        supported, unsupported, body_gaps, pp_flags = targets()
        sec.names("supported", supported)
        sec.names("unsupported", unsupported)
        sec.mapping("aux_body_not_mixin", body_gaps)
        sec.mapping("aux_over_pp", {k: v for k, v in pp_flags.items() if k in supported})
    with sec.guard("aux_body_assertion"):
        sec.where("aux_body_assertion", _assertion(tree))
    with sec.guard("aux_over_pp_check"):
        sec.where("aux_over_pp_check", _pp_check(tree))
    with sec.guard("fallback"):
        backend = {e.arch: e for e in registry()[BACKEND_DICT]}.get("TransformersForCausalLM")
        ref = mods.class_named(backend.module, backend.cls) if backend else None
        found = mods.declares_base(ref, _interface(mods)) if ref else None
        if found:
            owner, expr = found
            sec.where("fallback", owner.loc(expr.lineno).with_("TransformersForCausalLM implements SupportsEagle3"),
                      "vLLM's transformers backend (`--model-impl transformers`, TransformersForCausalLM) implements "
                      "the interface for classes the registry does not list")
    with sec.guard("draft_architectures_classes", "draft_architectures"):
        sec.mapping("draft_architectures_classes", drafts())
        sec.names("draft_architectures", {k: v[1] for k, v in drafts().items()})
    with sec.guard("draft_registry"):
        sec.names("draft_registry", {e.arch: e.loc.with_(f"{e.module}.{e.cls}") for e in registry()[DRAFT_DICT]})
    with sec.guard("features"):
        sec.names("features", feats())
    with sec.guard("draft_v1_refused"):
        if "v1_dflash_proposer" in feats():  # the V1 runner's refusals exist only while it does
            sec.names("draft_v1_refused", v1_refused(tree))
        else:
            sec.names("draft_v1_refused", {})
    with sec.guard("draft_v2_speculators"):
        if "v2_dflash_dispatch" in feats():
            sec.mapping("draft_v2_speculators", v2_speculators(tree, mods, drafts(), rename()))
        else:  # 0.34: each draft class names its settings class, which names the speculator
            sec.mapping("draft_v2_speculators", declared_speculators(mods, drafts()))
    with sec.guard("dflash_architecture_rename"):
        r = rename()
        sec.where("dflash_architecture_rename", r.loc.with_(
            f"method dflash: an architecture not starting with {r.starts}, not ending with {r.ends} and "
            f"not one of {r.keep} is looked up as {r.prefix}<arch>"))
    for key, path, runner in (("eagle3_interface_v1", V1_RUNNER, "V1"), ("eagle3_interface_v2", V2_EAGLE3, "V2")):
        with sec.guard(key):
            if runner == "V1" and "v1_dflash_proposer" not in feats():
                continue
            calls = calls_to(tree.parse(path), "supports_eagle3")
            if not calls:
                raise LayoutError(f"{path}: the {runner} runner no longer checks supports_eagle3")
            sec.where(key, Loc(path, calls[0].lineno, f"{runner} model runner: the target must implement "
                               "SupportsEagle3"))
    with sec.guard("method_config_modules"):
        sec.names("method_config_modules", method_config_modules(tree))
    with sec.guard("speculators_formats", "speculators_dflash_ids"):
        formats, minus_one = speculators_formats(tree)
        sec.names("speculators_formats", formats)
        sec.where("speculators_dflash_ids", minus_one)
    return sec
