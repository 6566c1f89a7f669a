"""What each engine supports, as read from its code: data/engine_support.json (facts) and
data/engine_sources.json (the file and line behind each fact), both written by
`python -m dflash_compat.enginefacts refresh` (docs/engine-facts.md)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence

if TYPE_CHECKING:
    from .provenance import EngineSource

__all__ = [
    "Support",
    "draft_support",
    "engine_data",
    "engine_versions",
    "provenance",
    "recurrent_model_types",
    "source_of",
    "sources",
    "target_support",
    "where",
]

Support = Literal["supported", "unsupported", "unknown"]

_DATA = Path(__file__).parent / "data" / "engine_support.json"
_SOURCES = _DATA.with_name("engine_sources.json")
# A source file's top package names the engine it belongs to (keys of contract.ENGINE_VERSIONS).
_ENGINE_OF_PACKAGE = {
    "vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx_lm": "mlx-lm",
    "transformers": "transformers", "speculators": "speculators",
}


@cache
def _load() -> dict[str, Any]:
    return json.loads(_DATA.read_text(encoding="utf-8"))


@cache
def _load_sources() -> dict[str, Any]:
    # Separate and lazy: every check reads the facts, only a message or doc that cites a line reads these.
    return json.loads(_SOURCES.read_text(encoding="utf-8"))


def engine_data(section: str) -> dict[str, Any]:
    """The facts of one section: "vllm", "sglang", "mlx", "transformers", "speculators", "dflash", "common"."""
    return _load()[section]


def engine_versions() -> dict[str, str]:
    """The engine releases the facts were read from (equal to contract.ENGINE_VERSIONS; a test pins it)."""
    return dict(_load()["engines"])


def recurrent_model_types() -> frozenset[str]:
    """Model types whose cache cropping cannot roll back (stateful / linear-attention / SSM / conv layers)."""
    return frozenset(engine_data("common")["recurrent_model_types"])


def _source(entry: dict[str, Any]) -> "EngineSource":
    from .provenance import EngineSource  # imported here to keep this module light

    path = entry["file"]
    return EngineSource(_ENGINE_OF_PACKAGE[path.split("/", 1)[0]], path, str(entry["line"]), entry.get("note", ""))


def source_of(section: str, kind: str, name: str) -> "EngineSource":
    """Where a list entry or dict key was read, e.g. source_of("vllm", "supported", "Qwen3ForCausalLM").

    KeyError when the section has no such entry (a fact we do not hold cannot be cited)."""
    return _source(_load_sources()[section][kind][name])


def sources(section: str, kind: str) -> dict[str, "EngineSource"]:
    """Every entry of one list or dict with its location."""
    return {name: _source(entry) for name, entry in _load_sources()[section][kind].items()}


def where(section: str, name: str) -> "EngineSource":
    """A located statement that is not a list entry, e.g. where("vllm", "dflash_architecture_rename")."""
    return source_of(section, "where", name)


def target_support(engine: str, architectures: Sequence[str]) -> tuple[Support, list[str]]:
    """Verdict for a target's `architectures`, and the class names it rests on.

    Any listed supported class wins; then any listed unsupported one; else unknown."""
    supported = [a for a in architectures if a in _names(engine, "supported")]
    if supported:
        return "supported", supported
    unsupported = [a for a in architectures if a in _names(engine, "unsupported")]
    if unsupported:
        return "unsupported", unsupported
    return "unknown", list(architectures)


def draft_support(architecture: str) -> dict[str, dict[str, Any]]:
    """What each engine does with a draft whose config.json `architectures` names this class:
    {"vllm": {"loads", "cls", "v2_speculator", "v1_refuses"}, "sglang": {"loads", "cls"},
    "dflash": {"loads"}}. Cite with source_of(engine, "draft_architectures", architecture)."""
    vllm, sglang = engine_data("vllm"), engine_data("sglang")
    return {
        "vllm": {
            "loads": architecture in _names("vllm", "draft_architectures"),
            "cls": vllm["draft_architectures_classes"].get(architecture),
            "v2_speculator": vllm["draft_v2_speculators"].get(architecture),
            "v1_refuses": architecture in _names("vllm", "draft_v1_refused"),
        },
        "sglang": {
            "loads": architecture in _names("sglang", "draft_architectures"),
            "cls": sglang["draft_architectures_classes"].get(architecture),
        },
        "dflash": {"loads": architecture in _names("dflash", "draft_architectures")},
    }


@cache
def _names(section: str, kind: str) -> frozenset[str]:
    return frozenset(engine_data(section)[kind])


def provenance(engine: str) -> str:
    """Where a list was read, for messages ("vLLM: ... (read from the vllm 0.33.0 wheel)")."""
    data = engine_data(engine)
    return f"{data['source']} (read from the {data['read']})"
