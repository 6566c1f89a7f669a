"""Facts for a window of engine releases: extract each release, resolve every rule citation's anchor in
it, and store the window compactly (one base release per engine plus per-release differences) in
dflash_compat/engines/data/engines/ (read by dflash_compat.engines.store, lazily, per release a check uses)."""

from __future__ import annotations

import gzip
import json
from typing import Any, Callable, Iterable, Optional

from dflash_compat.enginefacts import dflash, mlx, sglang, speculators, transformers, vllm
from dflash_compat.enginefacts.anchors import Anchor, anchor_at, resolve
from dflash_compat.enginefacts.build import META_KEYS, _is_location, render
from dflash_compat.enginefacts.facts import Section
from dflash_compat.enginefacts.source import LayoutError, SourceTree
from dflash_compat.engines import DATA_DIR
from dflash_compat.engines.registry import ENGINES

__all__ = ["SECTION", "STORE", "extract_one", "make_patch", "store_files", "unknown_facts"]

STORE = DATA_DIR / "engines"
# engine -> the section of engine_support its facts form
SECTION = {"vllm": "vllm", "sglang": "sglang", "mlx-lm": "mlx", "transformers": "transformers",
           "speculators": "speculators", "dflash": "dflash"}
# what each engine's reader also needs (the newest bundled release of these is used)
DEPENDS = {"mlx-lm": ("dflash", "transformers")}
ABOUT = ("Facts about each engine's DFlash support, read statically from the engines' wheels by `dflash-check "
         "facts refresh` (docs/engine-facts.md), for every release in `versions`. Do not edit by hand.")


def extract_one(engine: str, tree: SourceTree, deps: dict[str, SourceTree]) -> Section:
    if engine == "mlx-lm":
        hf = deps["transformers"]
        return mlx.extract(tree, deps["dflash"], lambda model_type: transformers.text_model_types(hf, model_type))
    reader = {"vllm": vllm, "sglang": sglang, "transformers": transformers, "speculators": speculators,
              "dflash": dflash}[engine]
    return reader.extract(tree)


def unknown_facts(facts: dict[str, Any]) -> dict[str, str]:
    return dict(facts.get("unknown", {}))


def check_located(section: str, facts: dict[str, Any], sources: dict[str, Any]) -> list[str]:
    missing = []
    for key, value in facts.items():
        if key in META_KEYS or key == "unknown":
            continue
        names = list(value) if isinstance(value, (list, dict)) else [key]
        have = sources.get(key if isinstance(value, (list, dict)) else "where", {})
        missing += [f"{section}.{key}: {n}" for n in names if not _is_location(have.get(n))]
    return missing


# -- citations ------------------------------------------------------------------------------------


def citation_key(engine: str, path: str, lines: str) -> str:
    return f"{engine} {path}:{lines}"


def citations() -> list[tuple[str, str, str, Optional[str]]]:
    """Every (engine, path, lines, typed release or None) a rule or data/draft_families.json cites (the rules'
    read from their source files: the extractor imports no rule)."""
    from dflash_compat.enginefacts.citations import rule_citations
    from dflash_compat.engines.families import all_sources

    seen = {c for c in rule_citations() if c[0] in ENGINES and ENGINES[c[0]].store == "wheels"}
    for src in all_sources():
        seen.add((src.engine, src.path, src.lines, src.version))
    return sorted(seen, key=lambda c: (c[0], c[1], c[2], c[3] or ""))


def anchors_for(engine: str, version: str, default: Optional[str], tree: SourceTree,
                cites: Iterable[tuple[str, str, str, Optional[str]]], known: dict[str, Any]) -> dict[str, Any]:
    """Anchors (JSON) of this engine's citations not yet in `known` whose lines were typed against this
    release (a citation's own `version`, else `default`). A citation outside its file is an error."""
    out = {}
    for eng, path, lines, typed in cites:
        key = citation_key(eng, path, lines)
        if eng != engine or key in known or (typed or default) != version:
            continue
        try:
            out[key] = anchor_at(tree, path, lines).as_json()
        except LayoutError as e:
            raise LayoutError(f"citation {key} (typed against {engine} {version}): {e}") from None
    return out


def resolve_all(engine: str, tree: SourceTree, anchors: dict[str, Any]) -> dict[str, Optional[str]]:
    out: dict[str, Optional[str]] = {}
    for key, data in sorted(anchors.items()):
        if not key.startswith(engine + " "):
            continue
        got = resolve(tree, Anchor.from_json(data))
        out[key] = None if got is None else (str(got[0]) if got[0] == got[1] else f"{got[0]}-{got[1]}")
    return out


# -- storage --------------------------------------------------------------------------------------

_DEL = {"$del": 1}


def make_patch(base: Any, new: Any) -> Any:
    """The difference from `base` to `new` (both JSON): dicts key by key (`{"$del": 1}` removes a key,
    `{"$in": patch}` changes inside a dict), sorted string lists as `{"$add": [...], "$rm": [...]}`,
    anything else `{"$set": value}`. engine_support.apply_patch undoes it."""
    out: dict[str, Any] = {}
    for key in base:
        if key not in new:
            out[key] = _DEL
    for key, value in new.items():
        if key not in base:
            out[key] = {"$set": value}
        elif base[key] != value:
            old = base[key]
            if isinstance(old, dict) and isinstance(value, dict):
                out[key] = {"$in": make_patch(old, value)}
            elif _str_list(old) and _str_list(value):
                out[key] = {"$add": sorted(set(value) - set(old)), "$rm": sorted(set(old) - set(value))}
            else:
                out[key] = {"$set": value}
    return out


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v) and v == sorted(set(v))


def store_files(window: dict[str, dict[str, tuple[dict, dict, dict]]], anchors: dict[str, Any],
                common: dict[str, Any]) -> dict[str, bytes]:
    """The bundled files: {name: bytes}. `window[engine][version] = (facts, sources, cites)`."""
    files: dict[str, bytes] = {}
    index: dict[str, Any] = {"about": ABOUT, "engines": {}}
    for engine, per in window.items():
        ordered = sorted(per, key=ENGINES[engine].key)
        base = ordered[-1]  # the newest: most checks use it, and it loads without a patch
        index["engines"][engine] = {"versions": ordered, "base": base, "section": SECTION[engine]}
        bf, bs, bc = per[base]
        facts = {"engine": engine, "base": base, "facts": bf,
                 "versions": {v: make_patch(bf, per[v][0]) for v in ordered if v != base}}
        files[f"{engine}.json"] = render(facts).encode()
        srcs = {"engine": engine, "base": base, "sources": bs, "cites": bc,
                "versions": {v: {"sources": make_patch(bs, per[v][1]), "cites": make_patch(bc, per[v][2])}
                             for v in ordered if v != base}}
        files[f"{engine}.sources.json.gz"] = gzip.compress(json.dumps(srcs, sort_keys=True,
                                                                      separators=(",", ":")).encode(), 9, mtime=0)
    index["common"] = common
    files["index.json"] = render(index).encode()
    files["anchors.json"] = render({"about": "Rule citations (engine path:lines as typed in rules/*.py and "
                                    "data/draft_families.json) and the anchor each is found by in any release: "
                                    "the class/function holding it and the code its first/last line holds.",
                                    "anchors": dict(sorted(anchors.items()))}).encode()
    return files


def build_common(window: dict[str, dict[str, tuple[dict, dict, dict]]]) -> dict[str, Any]:
    """The one list of model types whose cache cropping cannot roll back (contract.RECURRENT_MODEL_TYPES):
    over every bundled release, transformers' stateful / recurrent-layer lists and mlx-lm's non-trimmable
    list (a model type leaves it only when it leaves every release)."""
    names: dict[str, str] = {}
    for engine, kinds in (("transformers", ("stateful_model_types", "recurrent_layer_model_types")),
                          ("mlx-lm", ("non_trimmable_model_types",))):
        for version in sorted(window.get(engine, {}), key=ENGINES[engine].key):
            facts = window[engine][version][0]
            for kind in kinds:
                for name in facts.get(kind, []):
                    names.setdefault(name, f"{engine} {version} {kind}")
    return {"recurrent_model_types": sorted(names), "recurrent_model_types_from": dict(sorted(names.items()))}


def extract_window(window: dict[str, list[str]], open_tree: Callable[[str, str], SourceTree],
                   known_anchors: dict[str, Any], typed: dict[str, str],
                   report: Callable[[str], None] = lambda s: None, anchors_only: bool = False,
                   cites: Optional[list[tuple[str, str, str, Optional[str]]]] = None) -> tuple[dict, dict[str, Any]]:
    """Run every reader on every release of the window. `typed[engine]`: the release the citations'
    line numbers were typed against (new anchors are read there). `anchors_only`: resolve the known
    anchors only (facts on demand for one release)."""
    cites = citations() if cites is None else cites
    current = {citation_key(*c[:3]) for c in cites}
    # a citation no rule makes any more is dropped (on demand, for one release, every known anchor is kept)
    anchors = {k: v for k, v in known_anchors.items() if anchors_only or k in current}
    deps: dict[str, SourceTree] = {}
    for engine, needs in DEPENDS.items():
        if engine in window:
            for dep in needs:
                from dflash_compat.engines.registry import bundled_versions

                versions = sorted(window.get(dep) or list(bundled_versions(dep)), key=ENGINES[dep].key)
                deps[dep] = open_tree(dep, versions[-1])
    out: dict[str, dict[str, tuple[dict, dict, dict]]] = {}
    try:
        if not anchors_only:
            # every new citation's anchor first, read in the release its lines were typed against, so that each
            # release below resolves the same, complete set of anchors: one refresh reaches the fixed point
            # (resolving while anchors were still being added left new citations out of the releases read
            # before their typed one, until the next refresh)
            for engine, versions in window.items():
                new = {c[3] or typed.get(engine) for c in cites
                       if c[0] == engine and citation_key(*c[:3]) not in anchors}
                for version in sorted(new & set(versions), key=ENGINES[engine].key):
                    tree = open_tree(engine, version)
                    try:
                        anchors.update(anchors_for(engine, version, typed.get(engine), tree, cites, anchors))
                    finally:
                        if tree not in deps.values():
                            tree.close()
        for engine, versions in window.items():
            for version in sorted(versions, key=ENGINES[engine].key):
                tree = open_tree(engine, version)
                try:
                    sec = extract_one(engine, tree, deps)
                    facts, sources = sec.facts_json(), sec.sources_json()
                    sec_name = SECTION[engine]
                    missing = check_located(sec_name, facts, sources)
                    if missing:
                        raise LayoutError(f"{engine} {version}: {len(missing)} facts without a source, "
                                          f"e.g. {missing[0]}")
                    out.setdefault(engine, {})[version] = (facts, sources, resolve_all(engine, tree, anchors))
                    report(f"{engine} {version}: read")
                finally:
                    if tree not in deps.values():
                        tree.close()
    finally:
        for t in deps.values():
            t.close()
    if anchors_only:
        return out, anchors
    missing_typed = [c for c in cites if citation_key(*c[:3]) not in anchors and c[0] in window]
    if missing_typed:
        e, p, ln, v = missing_typed[0]
        raise LayoutError(f"{len(missing_typed)} citations have no anchor (e.g. {e} {p}:{ln}); refresh with the "
                          f"release they were typed against ({e} {v or typed.get(e)}) in the window")
    return out, anchors
