"""Which engines load each draft family, under which runner, and what each needs (data/draft_families.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Mapping, Optional

from dflash_compat.engines import DATA_DIR
from dflash_compat.engines.store import EngineSource

__all__ = ["EngineCheck", "FamilySupport", "family_support", "engines_loading", "read_date"]

_DATA = DATA_DIR / "draft_families.json"
# dflash-check backend -> the name we print
ENGINE_NAMES = {"transformers": "transformers", "dflash": "the dflash reference", "vllm": "vLLM", "sglang": "SGLang",
                "mlx": "MLX"}


@dataclass(frozen=True)
class EngineCheck:
    """A need of one engine that a config can be checked for (`check` names the predicate in DF009)."""

    check: str
    severity: str
    message: str
    fix: str
    sources: tuple[EngineSource, ...]


@dataclass(frozen=True)
class FamilySupport:
    """One engine's verdict on one family, with the engine code it rests on."""

    engine: str  # a dflash-check backend
    loads: bool
    sources: tuple[EngineSource, ...]
    cls: Optional[str] = None
    runner: Optional[str] = None
    reason: Optional[str] = None
    needs: tuple[str, ...] = ()
    checks: tuple[EngineCheck, ...] = field(default_factory=tuple)

    @property
    def label(self) -> str:
        """How prose names the engine ("vLLM", "the dflash reference")."""
        return ENGINE_NAMES[self.engine]

    def cite(self, versions: Optional[Mapping[str, Any]] = None) -> str:
        """The sources at the releases checked (`versions`: engine -> Selected; None: the newest bundled)."""
        versions = versions or {}
        return "; ".join(s.cite(versions[s.engine].used if s.engine in versions else None) for s in self.sources)


@cache
def _load() -> dict[str, Any]:
    return json.loads(_DATA.read_text(encoding="utf-8"))


def _sources(items: list[dict[str, str]]) -> tuple[EngineSource, ...]:
    return tuple(EngineSource(s["engine"], s["path"], s["lines"], s.get("note", ""), s.get("version")) for s in items)


def family_support(fmt: str, engine: str) -> Optional[FamilySupport]:
    """The verdict for a draft format on a backend; None when we have none (unknown families)."""
    entry = _load()["families"].get(fmt, {}).get(engine)
    if entry is None:
        return None
    checks = tuple(
        EngineCheck(c["check"], c["severity"], c["message"], c["fix"], _sources(c["sources"]))
        for c in entry.get("checks", ())
    )
    return FamilySupport(
        engine=engine, loads=bool(entry["loads"]), sources=_sources(entry["sources"]), cls=entry.get("class"),
        runner=entry.get("runner"), reason=entry.get("reason"), needs=tuple(entry.get("needs", ())), checks=checks,
    )


def engines_loading(fmt: str) -> list[FamilySupport]:
    """The verdicts of the backends whose engine loads this family, in dflash-check's backend order."""
    return [s for e in ENGINE_NAMES if (s := family_support(fmt, e)) is not None and s.loads]


def read_date() -> str:
    return str(_load()["read"])


def all_sources() -> list[EngineSource]:
    """Every engine citation in the file (the extractor turns each into an anchor resolved per release)."""
    out: list[EngineSource] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if {"engine", "path", "lines"} <= node.keys():
                out.append(EngineSource(node["engine"], node["path"], node["lines"], node.get("note", ""),
                                        node.get("version")))
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_load()["families"])
    return out
