"""The bundled engine facts on disk (data/engines/) and the user's cache of facts for other releases: the
files read per release, and a rule citation's lines at a release. engine_support builds on it; provenance
reads citations through it without the rest of engine_support."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Optional

from .engine_versions import bundled_versions, cache_dir

__all__ = ["SECTION_ENGINE", "apply_patch", "cite_lines"]

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
    import gzip  # only where a citation's source lines are read: not on a check's start-up path

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


def cite_lines(engine: str, path: str, lines: str, version: Optional[str] = None) -> Optional[str]:
    """The lines a rule's citation (typed as `path:lines`) has at a release: "1614-1620"; None when its
    anchor is gone there. KeyError when the citation has no anchor (not yet refreshed)."""
    if engine not in SECTION_ENGINE.values():
        raise KeyError(engine)
    v = _version(engine, version)
    return _located(engine, v)["cites"][f"{engine} {path}:{lines}"]
