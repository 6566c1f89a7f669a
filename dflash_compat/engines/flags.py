"""The engine flag facts `dflash-check launch` judges a command against (data/launch_flags.json, written by
`python -m dflash_compat.enginefacts.launch_flags` from the engines' own argument parsers)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Optional

from dflash_compat.engines import DATA_DIR

__all__ = ["bundled_versions", "flag_facts", "version_key", "newest"]

_DATA = DATA_DIR / "launch_flags.json"


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(_DATA.read_text(encoding="utf-8"))["engines"]


def version_key(version: str) -> tuple:
    """`0.33.0` -> (0, 33, 0); llama.cpp's `b11434` -> (11434,). Unreadable parts sort first."""
    return tuple(int(p) if p.isdigit() else -1 for p in re.findall(r"\d+|[A-Za-z]+", version.lstrip("bv")))


def bundled_versions(engine: str) -> list[str]:
    return sorted(_data().get(engine, {}), key=version_key)


def newest(engine: str) -> Optional[str]:
    versions = bundled_versions(engine)
    return versions[-1] if versions else None


def flag_facts(engine: str, version: str) -> Optional[dict[str, Any]]:
    """{"flags": {name: [file, line]}, ...} for that release; None when none is bundled."""
    return _data().get(engine, {}).get(version)
