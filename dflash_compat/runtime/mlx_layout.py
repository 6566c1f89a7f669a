"""Reading an mlx-lm model's layout: dotted paths and cache entries. Shared by the MLX probe and the MLX runtime.

Pure Python: it only follows attributes and asks cache objects about themselves, so it imports
neither mlx nor mlx-lm.
"""

from __future__ import annotations

from typing import Any

from dflash_compat.contract import MLX_ROTATING_CACHES

__all__ = ["get_path", "cache_facts"]


def get_path(obj: Any, path: str) -> Any:
    """`obj.a.b` for "a.b" through attributes and properties; None where a step is missing."""
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # a property that raises counts as absent
            return None
        if obj is None:
            return None
    return obj


def cache_facts(entry: Any) -> dict[str, Any]:
    """What kind of cache one mlx-lm cache entry is, and whether its state can be cut."""
    name = type(entry).__name__
    fact: dict[str, Any] = {"kind": name}
    if name in MLX_ROTATING_CACHES:
        fact.update(window=int(entry.max_size), keep=int(getattr(entry, "keep", 0)))
    if name == "CacheList":
        fact["parts"] = [cache_facts(c) for c in entry.caches]
    try:
        fact["trimmable"] = bool(entry.is_trimmable())
    except Exception:
        fact["trimmable"] = False
    return fact
