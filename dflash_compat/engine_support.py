"""Which target model classes each serving engine supports, read from data/engine_support.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Literal, Sequence

__all__ = ["Support", "engine_data", "target_support", "provenance"]

Support = Literal["supported", "unsupported", "unknown"]

_DATA = Path(__file__).parent / "data" / "engine_support.json"


@cache
def _load() -> dict[str, Any]:
    return json.loads(_DATA.read_text(encoding="utf-8"))


def engine_data(engine: str) -> dict[str, Any]:
    """The raw entry for one engine ("vllm", "sglang", "mlx")."""
    return _load()[engine]


def target_support(engine: str, architectures: Sequence[str]) -> tuple[Support, list[str]]:
    """Verdict for a target's `architectures`, and the class names it rests on.

    Any listed supported class wins; then any listed unsupported one; else unknown."""
    data = engine_data(engine)
    supported = [a for a in architectures if a in data["supported"]]
    if supported:
        return "supported", supported
    unsupported = [a for a in architectures if a in data["unsupported"]]
    if unsupported:
        return "unsupported", unsupported
    return "unknown", list(architectures)


def provenance(engine: str) -> str:
    """Where and when a list was read, for messages ("vLLM: ... (read mid-2026)")."""
    data = engine_data(engine)
    return f"{data['source']} (read {data['read']})"
