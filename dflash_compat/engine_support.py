"""What each engine supports, per release, as read from its code: data/engines/ (written by `dflash-check
facts refresh`, docs/engine-facts.md): `<engine>.json` holds the newest bundled release's facts and the
differences of every other bundled release, `<engine>.sources.json.gz` the file and line behind each
fact and each rule citation per release (read only when a message or a doc cites a line). Releases
outside the bundle come from the user's cache (`facts refresh --engine NAME==VERSION`).

Every function takes the release (`version`); None means the newest bundled one."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

from .engine_versions import ENGINES, bundled_versions, cache_dir

if TYPE_CHECKING:
    from .provenance import EngineSource

__all__ = [
    "SECTION_ENGINE",
    "Support",
    "apply_patch",
    "cite_lines",
    "draft_support",
    "engine_data",
    "engine_versions",
    "known",
    "provenance",
    "recurrent_model_types",
    "source_of",
    "sources",
    "target_support",
    "where",
]

Support = Literal["supported", "unsupported", "unknown"]

_STORE = Path(__file__).parent / "data" / "engines"
# A section of facts -> the engine whose release it follows ("mlx" is mlx-lm's models plus dflash's MLX port).
SECTION_ENGINE = {"vllm": "vllm", "sglang": "sglang", "mlx": "mlx-lm", "transformers": "transformers",
                  "speculators": "speculators", "dflash": "dflash"}
# A source file's top package names the engine it belongs to.
_ENGINE_OF_PACKAGE = {
    "vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx_lm": "mlx-lm",
    "transformers": "transformers", "speculators": "speculators",
}


def apply_patch(base: Any, patch: dict[str, Any]) -> Any:
    """Undo enginefacts.window.make_patch: the release's data from the base release's and the difference."""
    out = dict(base)
    for key, change in patch.items():
        if "$del" in change:
            out.pop(key, None)
        elif "$set" in change:
            out[key] = change["$set"]
        elif "$in" in change:
            out[key] = apply_patch(out.get(key, {}), change["$in"])
        else:
            out[key] = sorted((set(out.get(key, [])) - set(change["$rm"])) | set(change["$add"]))
    return out


@cache
def _index() -> dict[str, Any]:
    return json.loads((_STORE / "index.json").read_text(encoding="utf-8"))


@cache
def _engine_file(engine: str) -> dict[str, Any]:
    return json.loads((_STORE / f"{engine}.json").read_text(encoding="utf-8"))


@cache
def _sources_file(engine: str) -> dict[str, Any]:
    with gzip.open(_STORE / f"{engine}.sources.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def _version(engine: str, version: Optional[str]) -> str:
    return version or bundled_versions(engine)[-1]


@cache
def _facts(engine: str, version: str) -> dict[str, Any]:
    if version in bundled_versions(engine):
        data = _engine_file(engine)
        if version == data["base"]:
            return data["facts"]
        return apply_patch(data["facts"], data["versions"][version])
    path = cache_dir() / engine / version / "facts.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise KeyError(f"no facts for {engine} {version} (bundled: {', '.join(bundled_versions(engine))}); "
                       f"run `dflash-check facts refresh --engine {engine}=={version}`") from None


@cache
def _located(engine: str, version: str) -> dict[str, Any]:
    """{"sources": ..., "cites": ...} of one release."""
    if version in bundled_versions(engine):
        data = _sources_file(engine)
        if version == data["base"]:
            return {"sources": data["sources"], "cites": data["cites"]}
        diff = data["versions"][version]
        return {"sources": apply_patch(data["sources"], diff["sources"]),
                "cites": apply_patch(data["cites"], diff["cites"])}
    path = cache_dir() / engine / version / "sources.json"
    return json.loads(path.read_text(encoding="utf-8"))


def engine_data(section: str, version: Optional[str] = None) -> dict[str, Any]:
    """The facts of one section ("vllm", "sglang", "mlx", "transformers", "speculators", "dflash") at a
    release of its engine (None: the newest bundled)."""
    engine = SECTION_ENGINE[section]
    return _facts(engine, _version(engine, version))


def known(section: str, key: str, version: Optional[str] = None) -> bool:
    """False when the extractor could not find this fact in that release's code (it is recorded unknown)."""
    return key not in engine_data(section, version).get("unknown", {})


def features(section: str, version: Optional[str] = None) -> frozenset[str]:
    """The located behaviours present at a release (e.g. transformers' "recurrent_rollback")."""
    return frozenset(engine_data(section, version).get("features", ()))


def engine_versions() -> dict[str, str]:
    """The newest bundled release of every engine."""
    return {name: bundled_versions(name)[-1] for name in ENGINES if bundled_versions(name)}


def recurrent_model_types() -> frozenset[str]:
    """Model types whose cache cropping cannot roll back (stateful / linear-attention / SSM / conv layers),
    over every bundled release."""
    return frozenset(_index()["common"]["recurrent_model_types"])


def _source(entry: dict[str, Any], version: tuple[str, str]) -> "EngineSource":
    from .provenance import EngineSource  # imported here to keep this module light

    path = entry["file"]
    engine, section_engine = _ENGINE_OF_PACKAGE[path.split("/", 1)[0]], version[0]
    # a file of another engine (the mlx section reads dflash's MLX port): read from that engine's newest release
    release = version[1] if engine == section_engine else (bundled_versions(engine) or (None,))[-1]
    return EngineSource(engine, path, str(entry["line"]), entry.get("note", ""), version=release)


def source_of(section: str, kind: str, name: str, version: Optional[str] = None) -> "EngineSource":
    """Where a list entry or dict key was read at a release, e.g. source_of("vllm", "supported", "Qwen3ForCausalLM").

    KeyError when the section has no such entry (a fact we do not hold cannot be cited)."""
    engine = SECTION_ENGINE[section]
    v = _version(engine, version)
    return _source(_located(engine, v)["sources"][kind][name], (engine, v))


def sources(section: str, kind: str, version: Optional[str] = None) -> dict[str, "EngineSource"]:
    """Every entry of one list or dict with its location."""
    engine = SECTION_ENGINE[section]
    v = _version(engine, version)
    return {name: _source(entry, (engine, v)) for name, entry in _located(engine, v)["sources"][kind].items()}


def where(section: str, name: str, version: Optional[str] = None) -> "EngineSource":
    """A located statement that is not a list entry, e.g. where("vllm", "dflash_architecture_rename")."""
    return source_of(section, "where", name, version)


def cite_lines(engine: str, path: str, lines: str, version: Optional[str] = None) -> Optional[str]:
    """The lines a rule's citation (typed as `path:lines`) has at a release: "1614-1620"; None when its
    anchor is gone there. KeyError when the citation has no anchor (not yet refreshed)."""
    if engine not in SECTION_ENGINE.values():
        raise KeyError(engine)
    v = _version(engine, version)
    return _located(engine, v)["cites"][f"{engine} {path}:{lines}"]


def target_support(engine: str, architectures: Sequence[str], version: Optional[str] = None
                   ) -> tuple[Support, list[str]]:
    """Verdict for a target's `architectures`, and the class names it rests on.

    Any listed supported class wins; then any listed unsupported one; else unknown."""
    supported = [a for a in architectures if a in _names(engine, "supported", version)]
    if supported:
        return "supported", supported
    unsupported = [a for a in architectures if a in _names(engine, "unsupported", version)]
    if unsupported:
        return "unsupported", unsupported
    return "unknown", list(architectures)


def draft_support(architecture: str, versions: Optional[dict[str, str]] = None) -> dict[str, dict[str, Any]]:
    """What each engine does with a draft whose config.json `architectures` names this class:
    {"vllm": {"loads", "cls", "v2_speculator", "v1_refuses"}, "sglang": {"loads", "cls"},
    "dflash": {"loads"}}. `versions`: section -> release (default: the newest bundled)."""
    versions = versions or {}
    vv, sv, dv = versions.get("vllm"), versions.get("sglang"), versions.get("dflash")
    vllm, sglang = engine_data("vllm", vv), engine_data("sglang", sv)
    return {
        "vllm": {
            "loads": architecture in _names("vllm", "draft_architectures", vv),
            "cls": vllm["draft_architectures_classes"].get(architecture),
            "v2_speculator": vllm.get("draft_v2_speculators", {}).get(architecture),
            "v1_refuses": architecture in _names("vllm", "draft_v1_refused", vv),
        },
        "sglang": {
            "loads": architecture in _names("sglang", "draft_architectures", sv),
            "cls": sglang["draft_architectures_classes"].get(architecture),
        },
        "dflash": {"loads": architecture in _names("dflash", "draft_architectures", dv)},
    }


@cache
def _names(section: str, kind: str, version: Optional[str] = None) -> frozenset[str]:
    return frozenset(engine_data(section, version).get(kind, ()))


def provenance(section: str, version: Optional[str] = None) -> str:
    """Where a list was read, for messages ("vLLM: ... (read from the vllm 0.34.0 wheel)")."""
    engine = SECTION_ENGINE[section]
    data = engine_data(section, version)
    return f"{data['source']} (read from the {engine} {_version(engine, version)} wheel)"
