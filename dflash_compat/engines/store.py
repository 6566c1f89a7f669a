"""The bundled engine facts on disk (data/engines/) and the user's cache of facts for other releases: the
files read per release, and a rule citation's lines at a release. engine_support builds on it; provenance
reads citations through it without the rest of engine_support."""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Optional

from dflash_compat.engines import DATA_DIR
from dflash_compat.engines.registry import bundled_versions, cache_dir

__all__ = ["SECTION_ENGINE", "Facts", "UnknownFact", "apply_patch", "cite_lines"]

_STORE = DATA_DIR / "engines"
# A section of facts -> the engine whose release it follows ("mlx" is mlx-lm's models plus dflash's MLX port).
SECTION_ENGINE = {"vllm": "vllm", "sglang": "sglang", "mlx": "mlx-lm", "transformers": "transformers",
                  "speculators": "speculators", "dflash": "dflash"}
# A source file's top package names the engine it belongs to.
_ENGINE_OF_PACKAGE = {
    "vllm": "vllm", "sglang": "sglang", "dflash": "dflash", "mlx_lm": "mlx-lm",
    "transformers": "transformers", "speculators": "speculators",
}


class UnknownFact(Exception):
    """A fact the extractor could not find in a release's code (recorded `unknown` there) was read. The rule
    engine turns it into one info finding, "not judged for ENGINE VERSION: FACT unknown (why)", instead of a
    verdict built on a missing list."""

    def __init__(self, engine: str, version: str, fact: str, why: str):
        super().__init__(f"{engine} {version}: {fact} unknown ({why})")
        self.engine, self.version, self.fact, self.why = engine, version, fact, why


class Facts(dict):
    """The facts of one release: a dict, except that reading a fact recorded unknown at that release
    (`facts[key]`, `facts.get(key)`, `key in facts`) raises UnknownFact rather than answering as if the
    engine's code had nothing (an empty list would be a guess)."""

    __slots__ = ("engine", "version")

    def __init__(self, engine: str, version: str, data: dict[str, Any]):
        super().__init__(data)
        self.engine, self.version = engine, version

    def _check(self, key: Any) -> None:
        unknown = dict.get(self, "unknown")
        if unknown and key in unknown and key != "unknown":
            raise UnknownFact(self.engine, self.version, key, unknown[key])

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._check(key)
        return dict.get(self, key, default)

    def __contains__(self, key: Any) -> bool:
        self._check(key)
        return dict.__contains__(self, key)


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
def _facts(engine: str, version: str) -> Facts:
    if version in bundled_versions(engine):
        data = _engine_file(engine)
        if version == data["base"]:
            return Facts(engine, version, data["facts"])
        return Facts(engine, version, apply_patch(data["facts"], data["versions"][version]))
    path = cache_dir() / engine / version / "facts.json"
    try:
        return Facts(engine, version, json.loads(path.read_text(encoding="utf-8")))
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
