"""What each engine supports, per release, as read from its code: data/engines/ (written by `dflash-check
facts refresh`, docs/engine-facts.md): `<engine>.json` holds the newest bundled release's facts and the
differences of every other bundled release, `<engine>.sources.json.gz` the file and line behind each
fact and each rule citation per release (read only when a message or a doc cites a line). Releases
outside the bundle come from the user's cache (`facts refresh --engine NAME==VERSION`).

Every function takes the release (`version`); None means the newest bundled one."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

from dflash_compat.engines.registry import ENGINES, bundled_versions
from dflash_compat.engines.store import (  # noqa: F401 (_engine_file, _sources_file, _located: read by the tests)
    _ENGINE_OF_PACKAGE,
    SECTION_ENGINE,
    _engine_file,
    _facts,
    _index,
    _located,
    _sources_file,
    _version,
    apply_patch,
    cite_lines,
)

if TYPE_CHECKING:
    from dflash_compat.engines.provenance import EngineSource

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
    from dflash_compat.engines.provenance import EngineSource  # imported here to keep this module light

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
