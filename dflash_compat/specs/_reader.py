"""Reads values out of a raw config dict by dotted key, remembering which key each came from."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "ConfigReader", "get_dotted"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def get_dotted(raw: Any, key: str) -> Any:
    """`raw["a"]["b"]` for key "a.b"; MISSING where any step is absent or not a dict."""
    node = raw
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


class ConfigReader:
    """Looks fields up under several candidate keys and records the key that answered.

    `sources` maps a spec field name to the dotted key it was read from, so that a finding can
    point at `dflash_config.block_size` rather than at a field name of ours.
    """

    def __init__(self, raw: dict[str, Any], prefix: str = "") -> None:
        self.raw = raw
        self.prefix = prefix
        self.sources: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def _full(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def take(self, field: str, *keys: str, default: Any = None, absolute: bool = False) -> Any:
        """Store the first present key's value under `field` (None-valued keys count as absent)."""
        for key in keys:
            full = key if absolute else self._full(key)
            value = get_dotted(self.raw, full)
            if value is not MISSING and value is not None:
                self.values[field] = value
                self.sources[field] = full
                return value
        if default is not None:
            self.values[field] = default
        return default

    def all_present(self, *keys: str, absolute: bool = False) -> dict[str, Any]:
        """Every candidate key that is present, with its value (to detect two places that disagree)."""
        found: dict[str, Any] = {}
        for key in keys:
            full = key if absolute else self._full(key)
            value = get_dotted(self.raw, full)
            if value is not MISSING and value is not None:
                found[full] = value
        return found

    def set(self, field: str, value: Any, source: str | None = None) -> None:
        self.values[field] = value
        if source is not None:
            self.sources[field] = source
