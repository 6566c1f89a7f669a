"""Run every extractor on the engine wheels and assemble engine_support.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from dflash_compat.enginefacts import dflash, mlx, sglang, speculators, transformers, vllm
from dflash_compat.enginefacts.facts import Section
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["META_KEYS", "PACKAGES", "build", "locate", "missing_sources", "render", "wheel_version"]

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
            if key in META_KEYS or key == "unknown":  # unknown: fact -> why it could not be read (no value)
                continue
            names = list(value) if isinstance(value, (list, dict)) else [key]
            have = located.get(key if isinstance(value, (list, dict)) else "where", {})
            missing += [f"{section}.{key}: {name}" for name in names if not _is_location(have.get(name))]
    return missing


def _is_location(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("file"), str) and entry["file"].split("/")[0] in
            PACKAGES.values() and isinstance(entry.get("line"), int) and entry["line"] > 0)


def locate(engine: str, wheels: Optional[Path], cache: Path, version: Optional[str] = None) -> Path:
    """The wheel (or unpacked folder) of one engine release: from `wheels` if given, else downloaded to
    cache. `version` None: the newest release on the package index (downloaded)."""
    pkg = PACKAGES[engine]
    if version is None:
        return _download(engine, None, cache)
    for folder in ([wheels, wheels / "src"] if wheels else [cache]):
        found = sorted(folder.glob(f"{pkg}-{version}-*.whl")) if folder.is_dir() else []
        if found:
            return found[0]
        unpacked = folder / f"{pkg}-{version}"
        if unpacked.is_dir() and (unpacked / pkg).is_dir():
            return unpacked
        sdist = folder / f"{pkg}-{version}.tar.gz"  # a source distribution: the same Python sources
        if sdist.is_file():
            return sdist
    if wheels is not None:
        raise LayoutError(f"{wheels}: no {pkg}-{version}-*.whl (nor an unpacked {pkg}-{version}/, nor "
                          f"{pkg}-{version}.tar.gz); fetch it with `pip download --no-deps {engine}=={version} -d "
                          f"{wheels}`")
    return _download(engine, version, cache)


class IndexError_(LayoutError):
    """The package index could not be reached or has no such release (the command exits 2)."""


def _download(engine: str, version: Optional[str], cache: Path) -> Path:
    """pip download one release (None: the newest) into cache; the engine's tags first, then any."""
    pkg = PACKAGES[engine]
    cache.mkdir(parents=True, exist_ok=True)
    spec = f"{engine}=={version}" if version else engine
    before = set(cache.glob(f"{pkg}-*.whl"))
    last = "no wheel downloaded"
    for tags in (PIP_PLATFORM, ["--only-binary=:all:"]):  # vLLM 0.32.0's wheel carries other tags
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--timeout", "30", "--retries", "1", "-d", str(cache), *tags, spec]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise IndexError_(f"pip download {spec}: timed out") from None
        found = (sorted(cache.glob(f"{pkg}-{version}-*.whl")) if version
                 else sorted(set(cache.glob(f"{pkg}-*.whl")) - before))
        if res.returncode == 0 and found:
            return found[0]
        if version is None and res.returncode == 0:  # the newest was already in the cache: pip names it
            named = [Path(line.split()[-1]) for line in res.stdout.splitlines()
                     if line.startswith(("Saved ", "File was already downloaded "))]
            if named and named[-1].is_file():
                return named[-1]
        lines = [ln for ln in res.stderr.strip().splitlines() if not ln.startswith("WARNING")]
        last = (lines or [last])[-1]
    raise IndexError_(f"pip download {spec} failed: {last}")


def wheel_version(path: Path) -> str:
    """The release a wheel file, source distribution (NAME-VERSION.tar.gz) or unpacked NAME-VERSION folder
    holds."""
    name = path.name
    if name.endswith(".tar.gz"):
        name = name[:-len(".tar.gz")]
    return name.split("-")[1] if name.endswith(".whl") else name.rsplit("-", 1)[1]


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
        for name in sec.data.get(kind, []):  # an unknown list adds nothing (refresh reports it)
            src = sec.sources[kind][name]
            found.setdefault(name, Loc(src["file"], src["line"], f"{why}; {src.get('note', '')}".rstrip("; ")))
    common = Section()
    common.meta("source", "union of transformers.stateful_model_types, transformers.recurrent_layer_model_types "
                "and mlx.non_trimmable_model_types")
    common.names("recurrent_model_types", found)
    return common


def build(trees: dict[str, SourceTree], versions: Optional[dict[str, str]] = None
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(facts, sources) of one release of every engine (the fixture trees' layout): every section."""
    versions = versions or {e: "0" for e in PACKAGES}
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
    facts: dict[str, Any] = {"about": ABOUT, "engines": dict(versions)}
    facts.update({name: sec.facts_json() for name, sec in sections.items()})
    sources: dict[str, Any] = {"engines": dict(versions)}
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


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
