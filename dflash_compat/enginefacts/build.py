"""Run every extractor on the engine wheels and assemble engine_support.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from ..contract import ENGINE_VERSIONS
from . import dflash, mlx, sglang, speculators, transformers, vllm
from .facts import Section
from .source import LayoutError, Loc, SourceTree

__all__ = ["DATA", "META_KEYS", "PACKAGES", "SOURCES", "build", "locate", "missing_sources", "render"]

DATA = Path(__file__).resolve().parent.parent / "data" / "engine_support.json"
# The locations live in a second file: every check parses the facts, only citing a location needs these.
SOURCES = DATA.with_name("engine_sources.json")
# Engine (a key of ENGINE_VERSIONS) -> its top package, which is also how wheel files are named.
PACKAGES = {
    "vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx-lm": "mlx_lm",
    "transformers": "transformers", "speculators": "speculators",
}
# pip download picks one wheel per release; these are the tags the published wheels carry.
PIP_PLATFORM = ["--platform", "manylinux_2_34_x86_64", "--python-version", "3.11", "--implementation", "cp",
                "--only-binary=:all:"]
ABOUT = (
    "Facts about each engine's DFlash support, read statically from the engines' own sources at the versions "
    "in `engines` by `python -m dflash_compat.enginefacts refresh` (docs/engine-facts.md). Do not edit by "
    "hand. Every list entry and dict key has its location in engine_sources.json under the same section and "
    "key (file and line, relative to the wheel's top package); its `where` key holds locations that back a "
    "statement rather than a list entry."
)


# Descriptive text in a section, not facts: they need no location.
META_KEYS = frozenset({"source", "read", "interface"})


def missing_sources(facts: dict[str, Any], sources: dict[str, Any]) -> list[str]:
    """Every fact without a location: a list element or dict key missing from sources[section][key],
    or a text fact missing from sources[section]["where"]. Empty when the data is complete."""
    missing = []
    for section, data in facts.items():
        if section in ("about", "engines"):
            continue
        located = sources.get(section, {})
        for key, value in data.items():
            if key in META_KEYS:
                continue
            names = list(value) if isinstance(value, (list, dict)) else [key]
            have = located.get(key if isinstance(value, (list, dict)) else "where", {})
            missing += [f"{section}.{key}: {name}" for name in names if not _is_location(have.get(name))]
    return missing


def _is_location(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("file"), str) and entry["file"].split("/")[0] in
            PACKAGES.values() and isinstance(entry.get("line"), int) and entry["line"] > 0)


def locate(engine: str, wheels: Optional[Path], cache: Path) -> Path:
    """The wheel (or unpacked folder) of one engine: from `wheels` if given, else downloaded to cache."""
    pkg, version = PACKAGES[engine], ENGINE_VERSIONS[engine]
    for folder in ([wheels, wheels / "src"] if wheels else [cache]):
        found = sorted(folder.glob(f"{pkg}-{version}-*.whl")) if folder.is_dir() else []
        if found:
            return found[0]
        unpacked = folder / f"{pkg}-{version}"
        if unpacked.is_dir() and (unpacked / pkg).is_dir():
            return unpacked
    if wheels is not None:
        raise LayoutError(f"{wheels}: no {pkg}-{version}-*.whl (nor an unpacked {pkg}-{version}/)")
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache), *PIP_PLATFORM,
           f"{engine}=={version}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(cache.glob(f"{pkg}-{version}-*.whl"))
    if res.returncode != 0 or not found:
        last = (res.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise LayoutError(f"pip download {engine}=={version} failed: {last}")
    return found[0]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dflash-compat" / "wheels"


def _common(hf: Section, mlx_sec: Section) -> Section:
    """The one list of model types whose cache cropping cannot roll back (the checker and both runtimes
    read it as contract.RECURRENT_MODEL_TYPES): transformers' stateful classes and recurrent default
    layer types, and mlx-lm's non-trimmable caches."""
    found: dict[str, Loc] = {}
    for sec, kind, why in (
        (hf, "stateful_model_types", "transformers: stateful"),
        (hf, "recurrent_layer_model_types", "transformers: recurrent layer types"),
        (mlx_sec, "non_trimmable_model_types", "mlx-lm: non-trimmable cache"),
    ):
        for name in sec.data[kind]:
            src = sec.sources[kind][name]
            found.setdefault(name, Loc(src["file"], src["line"], f"{why}; {src.get('note', '')}".rstrip("; ")))
    common = Section()
    common.meta("source", "union of transformers.stateful_model_types, transformers.recurrent_layer_model_types "
                "and mlx.non_trimmable_model_types")
    common.names("recurrent_model_types", found)
    return common


def build(trees: dict[str, SourceTree]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(facts, sources): the contents of engine_support.json and engine_sources.json."""
    hf = transformers.extract(trees["transformers"])
    mlx_sec = mlx.extract(trees["mlx-lm"], trees["dflash"],
                          lambda model_type: transformers.text_model_types(trees["transformers"], model_type))
    sections = {
        "vllm": vllm.extract(trees["vllm"]),
        "sglang": sglang.extract(trees["sglang"]),
        "mlx": mlx_sec,
        "transformers": hf,
        "speculators": speculators.extract(trees["speculators"]),
        "dflash": dflash.extract(trees["dflash"]),
        "common": _common(hf, mlx_sec),
    }
    facts: dict[str, Any] = {"about": ABOUT, "engines": dict(ENGINE_VERSIONS)}
    facts.update({name: sec.facts_json() for name, sec in sections.items()})
    sources: dict[str, Any] = {"engines": dict(ENGINE_VERSIONS)}
    sources.update({name: sec.sources_json() for name, sec in sections.items()})
    missing = missing_sources(facts, sources)
    if missing:  # an extractor bug, but never write a fact we cannot cite
        raise LayoutError(f"{len(missing)} facts without a source, e.g. {missing[0]}")
    return facts, sources


def render(data: dict[str, Any]) -> str:
    """One list element or key per line (diffs read well); a dict of plain values, such as one
    source location, on one line."""
    return _render(data, 0) + "\n"


def _render(obj: Any, depth: int) -> str:
    def flat(value: Any) -> bool:
        return not isinstance(value, (dict, list)) or (isinstance(value, list) and not value)

    if isinstance(obj, dict) and obj and not all(flat(v) for v in obj.values()):
        pad = " " * (depth + 1)
        items = [f"{pad}{json.dumps(k)}: {_render(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(obj, list) and obj and not (len(obj) <= 4 and all(flat(v) for v in obj)):
        pad = " " * (depth + 1)
        return "[\n" + ",\n".join(pad + _render(v, depth + 1) for v in obj) + "\n" + " " * depth + "]"
    return json.dumps(obj, ensure_ascii=False)


def open_trees(wheels: Optional[Path], cache: Path) -> dict[str, SourceTree]:
    return {engine: SourceTree.open(locate(engine, wheels, cache)) for engine in ENGINE_VERSIONS}


def regenerate(wheels: Optional[Path] = None, cache: Optional[Path] = None) -> tuple[str, str]:
    """The texts of engine_support.json and engine_sources.json, from the engines' wheels."""
    trees = open_trees(wheels, cache or default_cache())
    try:
        facts, sources = build(trees)
        return render(facts), render(sources)
    finally:
        for tree in trees.values():
            tree.close()


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
