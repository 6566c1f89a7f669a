"""SGLang: registered classes that can capture DFlash layers, and the DFlash draft classes it loads."""

from __future__ import annotations

import ast

from dflash_compat.enginefacts.anchors import code_features
from dflash_compat.enginefacts.astutil import assigned, calls_to, function
from dflash_compat.enginefacts.delegation import Unresolved, delegation_gap
from dflash_compat.enginefacts.facts import Section, Step, require
from dflash_compat.enginefacts.pymod import ClassRef, Modules, string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["extract"]

MODELS = "sglang/srt/models"
REGISTRY = f"{MODELS}/registry.py"
HOOK = "set_dflash_layers_to_capture"
CAPTURE = "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py"
DRAFT_MODULE = "sglang.srt.models.dflash"
DRAFT_BASE = "DFlashDraftModel"
# DSpark drafts reuse the DFlash draft body but are served by --speculative-algorithm DSPARK.
DSPARK_MODULE = "sglang.srt.models.dspark"
DSPARK_MIXIN = "DSparkDraftMixin"
DFLASH_UTILS = "sglang/srt/speculative/dflash_utils.py"


def _check_registry(tree: SourceTree) -> None:
    """SGLang registers every top-level module of sglang.srt.models by its `EntryClass`; the class's
    own name is the architecture. Refuse to guess if that mechanism changed."""
    body = tree.parse(REGISTRY).body
    fn = function(body, "import_model_classes", REGISTRY)
    if not any(isinstance(n, ast.Attribute) and n.attr == "EntryClass" for n in ast.walk(fn)):
        raise LayoutError(f"{REGISTRY}: import_model_classes no longer reads EntryClass")
    if not any(isinstance(n, ast.Attribute) and n.attr == "__name__" for n in ast.walk(fn)):
        raise LayoutError(f"{REGISTRY}: architectures are no longer the classes' __name__")


def entry_classes(tree: SourceTree, mods: Modules) -> dict[str, tuple[ClassRef, Loc]]:
    """Architecture name -> (class, EntryClass line), over sglang/srt/models/*.py."""
    _check_registry(tree)
    out: dict[str, tuple[ClassRef, Loc]] = {}
    unresolved = []
    for path in tree.files(MODELS):
        module = path[:-3].replace("/", ".")
        try:
            value = assigned(mods.module_body(module), "EntryClass", path)
        except LayoutError:
            continue
        exprs = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        for expr in exprs:
            ref = mods.resolve(module, expr)
            if isinstance(ref, ClassRef):
                out[ref.name] = (ref, Loc(path, expr.lineno))
            else:
                unresolved.append(f"{path}:{expr.lineno}")
    if unresolved:
        raise LayoutError("SGLang EntryClass entries not resolved to a class: " + ", ".join(unresolved))
    require(out, "SGLang EntryClass classes", anchor="LlamaForCausalLM")
    return out


def capture_support(mods: Modules, entries: dict[str, tuple[ClassRef, Loc]]):
    """Classes whose hook works (defined or inherited, and any `self.<attr>.<hook>(...)` it makes reaches a
    class that has it too), classes without a working hook, and among those the ones whose hook hands the
    call to a part without it (arch -> (that part's class, the call))."""
    supported: dict[str, Loc] = {}
    unsupported: dict[str, Loc] = {}
    delegated: dict[str, tuple[str, Loc]] = {}
    unresolved: list[str] = []
    for arch, (ref, entry) in entries.items():
        found = mods.find_member(ref, HOOK)
        cls = f"{ref.path}:{ref.node.lineno}"
        if not found:
            unsupported[arch] = ref.loc().with_(f"{ref.name} has no {HOOK}", entry=str(entry))
            continue
        try:
            gap = delegation_gap(mods, ref, HOOK)
        except Unresolved as exc:
            unresolved.append(f"{arch} ({exc})")
            continue
        if gap is not None:
            unsupported[arch] = gap.loc.with_(
                f"{ref.name}'s {HOOK} calls self.{gap.attr}.{HOOK}, but self.{gap.attr} is {gap.missing.name} "
                f"({gap.missing.path}:{gap.missing.node.lineno}), which has none: AttributeError",
                entry=str(entry), cls=cls)
            delegated[arch] = (gap.missing.name, unsupported[arch])
            continue
        owner, stmt = found
        via = f" (inherited from {owner.name})" if owner != ref else ""
        supported[arch] = owner.loc(stmt.lineno).with_(f"{ref.name} defines {HOOK}{via}", entry=str(entry), cls=cls)
    if unresolved:
        raise LayoutError(f"SGLang {HOOK} delegations whose target class was not found: " + ", ".join(unresolved))
    require(supported, f"SGLang classes defining {HOOK}", anchor="LlamaForCausalLM")
    require(unsupported, f"SGLang classes without {HOOK}")
    return supported, unsupported, delegated


def draft_classes(mods: Modules, entries: dict[str, tuple[ClassRef, Loc]]):
    """Registered DFlash draft classes (DFlashDraftModel and classes derived from it), and the DSpark
    ones among them (derived from DSparkDraftMixin too), as two dicts arch -> (module.Class, loc)."""
    base = mods.class_named(DRAFT_MODULE, DRAFT_BASE)
    mixin = mods.class_named(DSPARK_MODULE, DSPARK_MIXIN)
    if base is None or mixin is None:
        raise LayoutError(f"{DRAFT_MODULE}.{DRAFT_BASE} or {DSPARK_MODULE}.{DSPARK_MIXIN} not found")
    dflash, dspark = {}, {}
    for arch, (ref, entry) in entries.items():
        mro = list(mods.mro(ref))
        if base not in mro:
            continue
        parent = next((b.name for _, b in mods.bases(ref) if isinstance(b, ClassRef)), "")
        note = "registered draft class" + (f", derived from {parent}" if ref != base else "")
        (dspark if mixin in mro else dflash)[arch] = (f"{ref.module}.{ref.name}", entry.with_(note))
    require(dflash, f"SGLang classes derived from {DRAFT_BASE}", anchor=DRAFT_BASE)
    return dflash, dspark


def _capture_call(tree: SourceTree) -> Loc:
    calls = calls_to(tree.parse(CAPTURE), HOOK)
    if not calls:
        raise LayoutError(f"{CAPTURE}: the DFLASH layer-capture call was not found")
    return Loc(CAPTURE, calls[0].lineno, f"DFLASH calls the target's {HOOK}; a class without it raises ValueError")


def _domino(tree: SourceTree) -> Loc:
    for node in ast.walk(tree.parse(DFLASH_UTILS)):
        if isinstance(node, ast.Compare) and "domino" in [string_value(c) for c in node.comparators]:
            return Loc(DFLASH_UTILS, node.lineno, "dflash_config.projector_type == \"domino\" selects the Domino "
                       "projector (read from dflash_config, else top level)")
    raise LayoutError(f"{DFLASH_UTILS}: the Domino projector_type check was not found")


SPEC_HOOK = "sglang/srt/arg_groups/speculative_hook.py"
# Behaviour that changed in the window, each located by the code it must contain (anchors.find_code).
FEATURES = {
    "dflash_rope_dim": ("sglang/srt/models/dflash.py", '"rope_dim" in rope_scaling',
                        "the DFlash draft's rotary width is rope_parameters.rope_dim when given"),
    "dflash_dp_attention_refused": (SPEC_HOOK, "Currently DFLASH speculative decoding does not support dp",
                                    "DFLASH refuses attention data parallelism off NPU"),
    "dflash_dp_attention_needs_dp_lm_head": (SPEC_HOOK, "DFLASH with dp attention requires --enable-dp-lm-head",
                                             "DFLASH with attention data parallelism needs --enable-dp-lm-head"),
}


FIELDS_DIR = "sglang/srt/arg_groups/fields"
SERVER_ARGS = "sglang/srt/server_args.py"


def _arg_call(annotation: ast.expr):
    """The `Arg(...)` call inside an `A[type, Arg(...)]` annotation, if any."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Arg":
            return node
    return None


def cli_flags(tree: SourceTree) -> dict[str, Loc]:
    """The launch flags `python -m sglang.launch_server` accepts: every ServerArgs field declared as
    `A[type, "help"]` or `A[type, Arg(...)]` (not `Arg(no_cli=True)`) under its `--field-name` (or
    `cli_name`) and its `aliases` (arg_groups/arg_utils.py add_cli_args_from_dataclass), plus the flags
    `add_cli_args` registers by hand."""
    found: dict[str, Loc] = {}
    for path in [*tree.files(FIELDS_DIR), SERVER_ARGS]:
        if not tree.exists(path):
            continue
        module = tree.parse(path)
        for cls in (n for n in ast.walk(module) if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                ann = stmt.annotation  # `A[type, "help"]` or `A[type, Arg(...)]`: a CLI field unless no_cli
                if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
                    continue
                call = _arg_call(ann)
                kw = {k.arg: k.value for k in call.keywords if k.arg} if call is not None else {}
                if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
                    continue
                name = string_value(kw.get("cli_name")) or "--" + stmt.target.id.replace("_", "-")
                names = [name] + [s for s in (string_value(e) for e in getattr(kw.get("aliases"), "elts", []))
                                  if s]
                for flag in names:
                    found.setdefault(flag, Loc(path, stmt.lineno, f"ServerArgs.{stmt.target.id}"))
        for call in calls_to(module, "add_argument"):
            flag = string_value(call.args[0]) if call.args else None
            if flag and flag.startswith("--"):
                found.setdefault(flag, Loc(path, call.lineno, "registered by add_cli_args"))
    require(found, "SGLang launch flags", anchor="--model-path")
    return found


def extract(tree: SourceTree) -> Section:
    """Each fact is read on its own: one the reader cannot find at this release (or whose step, such as the
    EntryClass list, fails) is recorded unknown with why, and the others are still read."""
    mods = Modules(tree)
    entries = Step(lambda: entry_classes(tree, mods))
    capture = Step(lambda: capture_support(mods, entries()))
    drafts = Step(lambda: draft_classes(mods, entries()))
    sec = Section()
    sec.meta("source", f"SGLang: EntryClass classes of sglang/srt/models that define {HOOK} (directly or "
             "through a base class)")
    sec.meta("interface", HOOK)
    with sec.guard("supported", "unsupported", "hook_delegated_to_missing"):
        supported, unsupported, delegated = capture()
        sec.names("supported", supported)
        sec.names("unsupported", unsupported)
    with sec.guard("features"):
        sec.names("features", code_features(tree, FEATURES, required=True))
    with sec.guard("cli_flags"):
        sec.names("cli_flags", cli_flags(tree))
    with sec.guard("supported", "unsupported", "hook_delegated_to_missing"):
        sec.mapping("hook_delegated_to_missing", capture()[2])
    with sec.guard("fallback_without_hook"):
        fallback = mods.class_named("sglang.srt.models.transformers", "TransformersForCausalLM")
        if fallback is not None and mods.find_member(fallback, HOOK) is None:
            sec.where("fallback_without_hook", fallback.loc().with_(
                f"TransformersForCausalLM (SGLang's fallback for unlisted classes) has no {HOOK}"))
    with sec.guard("draft_architectures_classes", "draft_architectures", "dspark_architectures_classes"):
        dflash, dspark = drafts()
        sec.mapping("draft_architectures_classes", dflash)
        sec.names("draft_architectures", {k: v[1] for k, v in dflash.items()})
        sec.mapping("dspark_architectures_classes", dspark)
    with sec.guard("capture_call"):
        sec.where("capture_call", _capture_call(tree))
    with sec.guard("domino_projector"):
        sec.where("domino_projector", _domino(tree))
    return sec
