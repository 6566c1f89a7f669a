"""Data flows one way: every import in dflash_compat (with its rules and adapters) follows the layer order.

    base -> resolve -> specs -> facts -> inspection -> checker -> rules -> emitters -> pipeline
         -> features -> cli

Each layer is a set of folders (rooms): a module belongs to the layer of its folder. A module may import
its own layer and the layers its entry in ALLOWED names, nothing later in the flow. runtime/ and
adapters/ are a side branch: they may use base, resolve and specs, never the checker's facts,
inspection, rules, report or output; only the inspection (to wrap a model in an adapter) and the
features may use them. Every import counts: top-level, lazy (inside a function) and TYPE_CHECKING-only
alike, read from the source with `ast` (nothing is imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# installed name -> source folder (pyproject's package-dir)
PACKAGES = {"dflash_compat": ROOT / "dflash_compat", "dflash_compat.rules": ROOT / "rules",
            "dflash_compat.adapters": ROOT / "adapters"}

# The flow, in order: layer -> its folders (packages). `base` is also every module at the package root.
LAYERS = {
    # the package root's own modules (contract, exceptions, quoting, inputs, terminal), the serving engines'
    # registry and facts (engines/), and bounded file reading and writing (files/)
    "base": ("dflash_compat.engines", "dflash_compat.files"),
    "resolve": ("dflash_compat.resolve",),
    # input parsing: the specs of a pair, and launch files read into engine launches
    "specs": ("dflash_compat.specs", "dflash_compat.deployment", "dflash_compat.launch"),
    "facts": ("dflash_compat.modelfacts",),
    "inspection": ("dflash_compat.inspection",),
    # the rule engine: rules, their context, the runner, findings and the report
    "checker": ("dflash_compat.checker",),
    "rules": ("dflash_compat.rules",),
    "emitters": ("dflash_compat.emitters",),
    # what runs the rules: the pair check, the launch-file check; convert (it names tensors as the DF6xx
    # rules do)
    "pipeline": ("dflash_compat.pipeline", "dflash_compat.convert"),
    # the commands' own work: the serve plan, the live-server probe, smoke, init-draft, train, the facts
    # extractor (a maintainers' command)
    "features": ("dflash_compat.serve", "dflash_compat.liveprobe", "dflash_compat.smoke", "dflash_compat.init_draft",
                 "dflash_compat.train", "dflash_compat.enginefacts", "dflash_compat.finddraft"),
    "cli": ("dflash_compat.cli", "dflash_compat.__main__"),
    "side": ("dflash_compat.runtime", "dflash_compat.adapters"),
}
ORDER = [name for name in LAYERS if name != "side"]

# What each layer may import besides itself. Rules and the checker never see the inspection (they read
# facts).
ALLOWED = {
    "base": set(),
    "resolve": {"base"},
    "specs": {"base"},
    "facts": {"base"},
    "inspection": {"base", "resolve", "specs", "facts", "side"},
    "checker": {"base", "specs", "facts"},
    "rules": {"base", "specs", "facts", "checker"},
    "emitters": {"base", "checker"},
    "pipeline": {"base", "resolve", "specs", "facts", "inspection", "checker", "rules", "emitters"},
    "features": set(ORDER[: ORDER.index("features")]) | {"side"},
    "cli": set(ORDER) | {"side"},
    "side": {"base", "resolve", "specs"},
}

# Imports that run against the flow today, each with the work that removes it. The test fails when
# one is gone, so that this list cannot outlive its reason.
PENDING: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for pkg, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([pkg, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every dflash_compat module `name` imports, resolved to a module where the name is one."""
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("dflash_compat")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("dflash_compat"):
                out |= {f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names}
    return out - {name}


def layer_of(module: str) -> str:
    for name, folders in LAYERS.items():
        if any(module == f or module.startswith(f + ".") for f in folders):
            return name
    path = MODULES.get(module)
    # a module at the package root (not a folder of its own) is base
    if path is not None and path.parent == PACKAGES["dflash_compat"] and module.count(".") <= 1:
        return "base"
    raise AssertionError(f"{module} belongs to no layer: add its folder to LAYERS")


def _edges() -> set[tuple[str, str]]:
    return {(name, target) for name, path in MODULES.items() for target in _imports(name, path)}


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


def test_allowed_layers_only_look_back_along_the_flow():
    for layer, allowed in ALLOWED.items():
        if layer == "side":
            continue
        later = [other for other in allowed if other != "side" and ORDER.index(other) > ORDER.index(layer)]
        assert not later, f"{layer} may not import the later layers {later}"


def test_imports_follow_the_flow():
    bad = sorted(
        f"{src} ({layer_of(src)}) imports {dst} ({layer_of(dst)})"
        for src, dst in _edges() - PENDING
        if layer_of(src) != layer_of(dst) and layer_of(dst) not in ALLOWED[layer_of(src)]
    )
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_pending_exceptions_still_exist():
    gone = PENDING - _edges()
    assert not gone, f"no longer imported, remove from PENDING: {sorted(gone)}"


def test_the_graph_test_can_fail():
    # the reader resolves relative and absolute imports, lazy ones included
    engine = _imports("dflash_compat.checker.context", MODULES["dflash_compat.checker.context"])
    assert "dflash_compat.checker.findings" in engine and "dflash_compat.modelfacts" in engine
    probe = _imports("dflash_compat.inspection.torch_meta", MODULES["dflash_compat.inspection.torch_meta"])
    assert "dflash_compat.adapters.loading" in probe  # a lazy import inside a function
    assert layer_of("dflash_compat.inspection.torch_meta") == "inspection" and layer_of("dflash_compat") == "base"
    with pytest.raises(AssertionError, match="belongs to no layer"):
        layer_of("dflash_compat.new_folder.module")  # a new folder must be given a layer
    assert "inspection" not in ALLOWED["rules"] and "rules" not in ALLOWED["checker"]


@pytest.mark.parametrize("module", ["dflash_compat.inspection", "dflash_compat.checker", "dflash_compat.emitters"])
def test_no_layer_below_the_cli_reaches_the_console(module):
    for name, path in MODULES.items():
        if name == module or name.startswith(module + "."):
            assert "dflash_compat.cli.console" not in _imports(name, path), name


def test_no_command_imports_the_cli(tmp_path):
    """Commands report errors by raising a DFlashCompatError (exceptions.py) that the CLI group renders
    (errors.py); none reaches up into `cli` (for `fail` or anything else), lazily or not."""
    bad = sorted(name for name, path in MODULES.items()
                 if name.startswith(("dflash_compat.cli.commands", *LAYERS["features"]))
                 and "dflash_compat.cli.app" in _imports(name, path))
    assert not bad, f"modules below the CLI that import dflash_compat.cli.app: {bad}"
    # the check can fail: the reader sees `from ..app import fail` inside a function of a command
    old = tmp_path / "old_style.py"
    old.write_text("def f(exc):\n    from ..app import fail\n\n    fail(exc)\n", encoding="utf-8")
    assert "dflash_compat.cli.app" in _imports("dflash_compat.cli.commands.old_style", old)


# Import circles that exist today, each with the work that removes it. Like PENDING, an entry fails the
# test once its circle is gone, so that it cannot outlive its reason.
# (None today: issue #21 removed contract -> engine_support -> provenance -> contract.)
KNOWN_CYCLES: set[frozenset[str]] = set()


def import_cycles(edges: set[tuple[str, str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (or a module importing itself): every
    import circle, each once (Tarjan's algorithm, iterative)."""
    graph: dict[str, list[str]] = {}
    for src, dst in sorted(edges):
        graph.setdefault(src, []).append(dst)
        graph.setdefault(dst, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(graph[node]):
                work.append((node, i + 1))
                nxt = graph[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.add(member)
                    if member == node:
                        break
                if len(comp) > 1 or (node, node) in edges:
                    cycles.append(frozenset(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return cycles


def _module_edges() -> set[tuple[str, str]]:
    return {(src, dst) for src, dst in _edges() if dst in MODULES}


def test_the_import_graph_is_acyclic():
    """No import circles in dflash_compat (its rules and adapters included), lazy imports counted: issue #23
    removed smoke <-> smoke_mlx and specs.draft <-> specs.draft_formats."""
    found = set(import_cycles(_module_edges()))
    new = sorted(sorted(c) for c in found - KNOWN_CYCLES)
    assert not new, "import circles:\n" + "\n".join(" <-> ".join(c) for c in new)


def test_known_cycles_still_exist():
    gone = KNOWN_CYCLES - set(import_cycles(_module_edges()))
    assert not gone, f"no longer a circle, remove from KNOWN_CYCLES: {[sorted(c) for c in gone]}"


def test_the_cycle_finder_can_fail():
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "f"), ("g", "a")}
    assert set(import_cycles(edges)) == {frozenset("abc"), frozenset("de"), frozenset("f")}
    assert import_cycles({("a", "b"), ("b", "c"), ("a", "c")}) == []
    # the two circles issue #23 removed would be found by this reader: each side's import is seen
    assert "dflash_compat.specs.draft" in _imports("dflash_compat.specs.draft_formats",
                                                   MODULES["dflash_compat.specs.draft_formats"])
    assert "dflash_compat.cli.commands.smoke_mlx" in _imports("dflash_compat.cli.commands.smoke",
                                                          MODULES["dflash_compat.cli.commands.smoke"])


# What a rule file may import: the rule API (dflash_compat.checker), the specs' public modules, the typed deep
# facts, the contract's constants, message quoting, and the rules' own helpers (never another rule). Engine
# knowledge reaches a rule only through `RuleContext.engine(name)` (and `family(...)`), never through a store, a
# reader or a launch module.
RULE_API = {"dflash_compat.checker", "dflash_compat.contract", "dflash_compat.quoting", "dflash_compat.rules"}


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def rule_may_import(dst: str) -> bool:
    if dst.startswith("dflash_compat.rules."):
        return not dst.rsplit(".", 1)[-1].startswith("df")  # a helper, not another rule
    if dst in RULE_API:
        return True
    public = ("dflash_compat.specs", "dflash_compat.modelfacts")
    return (dst in public or dst.startswith(tuple(p + "." for p in public))) and not _private(dst)


def test_rules_import_only_the_rule_api(tmp_path):
    bad = sorted(f"{name} imports {dst}" for name, path in MODULES.items() if name.startswith("dflash_compat.rules.")
                 for dst in _imports(name, path) if not rule_may_import(dst))
    assert not bad, "rules reach past the rule API:\n" + "\n".join(bad)
    # the test can fail: a store, a private spec module, a launch module, another rule
    probe = tmp_path / "df399_probe.py"
    probe.write_text("from dflash_compat.engines.store import release\nfrom dflash_compat.specs._reader import MISSING\n"
                     "from dflash_compat.launch.parse import Launch\n"
                     "from dflash_compat.rules.vllm import df301_vllm_draft_architecture_unsupported\n",
                     encoding="utf-8")
    seen = _imports("dflash_compat.rules.vllm.df399_probe", probe)
    assert not any(rule_may_import(d) for d in seen) and len(seen) == 4, seen


def test_the_facts_extractor_imports_no_rule():
    """The rules read the engine facts; the extractor (enginefacts) reads the rules' citations from their source
    files, never by importing them (an arrow up the flow)."""
    bad = sorted(f"{name} imports {dst}" for name, path in MODULES.items() if name.startswith("dflash_compat.enginefacts")
                 for dst in _imports(name, path) if dst.startswith("dflash_compat.rules"))
    assert not bad, bad
