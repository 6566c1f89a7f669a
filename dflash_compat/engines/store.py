"""The one door to engine knowledge: `release(engine, version)` is what one engine's code does at one
release, for every engine the registry knows (transformers, dflash, vLLM, SGLang, mlx-lm, speculators,
llama.cpp, and any engine added later).

What a release holds, all read from the engine's own code by `dflash_compat.enginefacts` and bundled in
data/ (docs/engine-facts.md):
- facts: lists, tables and located behaviours (`engines/<engine>.json` for a Python wheel, the newest
  bundled release whole and every other one as a difference; `llamacpp/<build>.json` for a llama.cpp
  build); releases outside the bundle come from the user's cache (`facts refresh`);
- where each fact and each rule citation sits at that release (`<engine>.sources.json.gz`, read only
  when a message or a doc cites a line);
- its launch flags (`launch_flags.json`, read only when a launch is judged).

A fact the extractor could not find at a release is recorded unknown there: reading it raises
UnknownFact, which the rule runner turns into "not judged for ENGINE VERSION". Standard library only;
every file loads on first use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Optional, Sequence

from dflash_compat.engines import DATA_DIR
from dflash_compat.engines.registry import ENGINES, EngineInfo, bundled_versions, cache_dir, refresh_command

__all__ = [
    "EngineSource",
    "Facts",
    "Release",
    "Support",
    "UnknownFact",
    "apply_patch",
    "cite_lines",
    "draft_support",
    "flag_versions",
    "located",
    "newest_versions",
    "recurrent_model_types",
    "release",
]

Support = Literal["supported", "unsupported", "unknown"]

_WHEELS = DATA_DIR / "engines"
_BUILDS = DATA_DIR / "llamacpp"
_FLAGS = DATA_DIR / "launch_flags.json"
# A source file's top folder names the engine it belongs to (the mlx facts read dflash's MLX port too).
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


@dataclass(frozen=True)
class EngineSource:
    """Where an engine decides what a rule says: a file and line range, relative to the wheel's top package.

    In a rule, `lines` are typed against one release; they are the citation's name. The extractor turns each
    citation into an anchor (the class or function holding it and the code it contains) and resolves it in
    every bundled release, so `cite(version)` prints the lines of the release a check judged against."""

    engine: str  # a registered engine name (engine_versions.ENGINES)
    path: str  # e.g. "vllm/config/speculative.py"
    lines: str  # "1614" or "1614-1620"
    note: str = ""  # what these lines decide, in a few words
    # The release `lines` belong to when they were read from facts of one release (engine_support.source_of);
    # None: a rule's typed citation, resolved per release through its anchor.
    version: Optional[str] = None

    def at(self, version: Optional[str] = None) -> tuple[str, Optional[str]]:
        """(release, its lines); lines None when the anchor is gone at that release."""
        v = version or (bundled_versions(self.engine) or ("?",))[-1]
        try:
            return v, cite_lines(self.engine, self.path, self.lines, v)
        except (KeyError, OSError, ValueError):  # no anchor (a located fact, or not refreshed yet): as given
            return (self.version or v), self.lines

    def cite(self, version: Optional[str] = None) -> str:
        """"vllm 0.34.0 vllm/config/speculative.py:1614-1620"; `version` None: the newest bundled release."""
        v, lines = self.at(version)
        if lines is None:
            return f"{self.engine} {v} {self.path}: not in this release (anchor gone)"
        return f"{self.engine} {v} {self.path}:{lines}"


# ---- the files --------------------------------------------------------------------------------------


@cache
def _index() -> dict[str, Any]:
    return json.loads((_WHEELS / "index.json").read_text(encoding="utf-8"))


@cache
def _wheel_file(engine: str) -> dict[str, Any]:
    return json.loads((_WHEELS / f"{engine}.json").read_text(encoding="utf-8"))


@cache
def _sources_file(engine: str) -> dict[str, Any]:
    import gzip  # only where a citation's source lines are read: not on a check's start-up path

    with gzip.open(_WHEELS / f"{engine}.sources.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


@cache
def _build_file(build: str) -> dict[str, Any]:
    return json.loads((_BUILDS / f"{build}.json").read_text(encoding="utf-8"))


@cache
def _flags_file() -> dict[str, Any]:
    return json.loads(_FLAGS.read_text(encoding="utf-8"))["engines"]


def _from_builds(engine: str) -> bool:
    """llama.cpp's facts are per build, read from a source tree (data/llamacpp/<build>.json)."""
    return ENGINES[engine].store == "builds"


@cache
def _facts(engine: str, version: str) -> Facts:
    if _from_builds(engine):
        if version not in bundled_versions(engine):
            raise KeyError(f"no facts for {engine} {version} (bundled: {', '.join(bundled_versions(engine))})")
        return Facts(engine, version, _build_file(version)["facts"])
    if version in bundled_versions(engine):
        data = _wheel_file(engine)
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
    """{"sources": kind -> name -> {file, line, note}, "cites": citation -> lines} of one release."""
    if _from_builds(engine):
        return {"sources": _build_file(version)["sources"], "cites": {}}
    if version in bundled_versions(engine):
        data = _sources_file(engine)
        if version == data["base"]:
            return {"sources": data["sources"], "cites": data["cites"]}
        diff = data["versions"][version]
        return {"sources": apply_patch(data["sources"], diff["sources"]),
                "cites": apply_patch(data["cites"], diff["cites"])}
    path = cache_dir() / engine / version / "sources.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _newest(engine: str) -> str:
    versions = bundled_versions(engine)
    if not versions:
        raise KeyError(f"no bundled facts for {engine}")
    return versions[-1]


def cite_lines(engine: str, path: str, lines: str, version: Optional[str] = None) -> Optional[str]:
    """The lines a rule's citation (typed as `path:lines`) has at a release: "1614-1620"; None when its
    anchor is gone there. KeyError when the citation has no anchor (not yet refreshed, or an engine whose
    citations are located facts: llama.cpp)."""
    if engine not in ENGINES or _from_builds(engine):
        raise KeyError(engine)
    return _located(engine, version or _newest(engine))["cites"][f"{engine} {path}:{lines}"]


# ---- one engine at one release -------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """What one engine's code does at one release: the rules' only view of engine knowledge
    (`RuleContext.engine(name)`)."""

    engine: str
    version: str

    @property
    def info(self) -> EngineInfo:
        return ENGINES[self.engine]

    @property
    def label(self) -> str:
        return self.info.label or self.engine

    def __str__(self) -> str:
        return f"{self.engine} {self.version}"

    # -- versions
    def key(self, version: Optional[str] = None) -> tuple:
        """The registry's sort key of this release (or of another release of the same engine)."""
        return self.info.key(self.version if version is None else version)

    def at_least(self, version: str) -> bool:
        """Whether this release is `version` or newer (the engine's own version order)."""
        return self.key() >= self.key(version)

    @property
    def predates_dflash(self) -> bool:
        return self.info.predates_dflash(self.version)

    @property
    def window(self) -> tuple[str, ...]:
        """The releases of this engine whose facts are bundled, oldest first."""
        return bundled_versions(self.engine)

    def refresh_command(self, version: Optional[str] = None) -> str:
        """The command that extracts the facts of `version` (default: this release)."""
        return refresh_command(self.engine, version or self.version)

    # -- facts
    @property
    def facts(self) -> Facts:
        return _facts(self.engine, self.version)

    def get(self, key: str, default: Any = None) -> Any:
        return self.facts.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.facts[key]

    def known(self, key: str) -> bool:
        """False when that fact could not be found in this release's code (it is recorded unknown)."""
        return key not in dict.get(self.facts, "unknown", {})

    def unknown_why(self, key: str) -> str:
        return dict.get(self.facts, "unknown", {}).get(key, "")

    def feature(self, name: str) -> bool:
        """Whether a located behaviour (the facts' `features`) is in this release."""
        return name in self.facts.get("features", ())

    def names(self, kind: str) -> frozenset[str]:
        """A list or table of the facts as a set of names ("supported", "draft_architectures", ...)."""
        return _names(self.engine, self.version, kind)

    # -- where it is written
    def source(self, kind: str, name: str) -> EngineSource:
        """Where a list entry or table key was read at this release, e.g. source("supported",
        "Qwen3ForCausalLM"); KeyError when there is none (a fact we do not hold cannot be cited)."""
        return self._source(_located(self.engine, self.version)["sources"][kind][name])

    def sources(self, kind: str) -> dict[str, EngineSource]:
        """Every entry of one list or table with its location."""
        return {name: self._source(entry)
                for name, entry in _located(self.engine, self.version)["sources"][kind].items()}

    def where(self, name: str, note: Optional[str] = None) -> EngineSource:
        """A located statement that is not a list entry, e.g. where("dflash_architecture_rename")."""
        src = self.source("where", name)
        return src if note is None else EngineSource(src.engine, src.path, src.lines, note, src.version)

    def cite(self, src: EngineSource) -> str:
        """`src` at this release ("vllm 0.34.0 vllm/config/speculative.py:1614-1620")."""
        return src.cite(self.version if src.engine == self.engine else None)

    def _source(self, entry: dict[str, Any]) -> EngineSource:
        path = entry["file"]
        engine = self.engine
        if not _from_builds(engine):
            engine = _ENGINE_OF_PACKAGE.get(path.split("/", 1)[0], engine)
        # a file of another engine (the mlx facts read dflash's MLX port): from that engine's newest release
        release = self.version if engine == self.engine else (bundled_versions(engine) or (None,))[-1]
        return EngineSource(engine, path, str(entry["line"]), entry.get("note", ""), version=release)

    def provenance(self) -> str:
        """Where a list was read, for messages ("... (read from the vllm 0.34.0 wheel)")."""
        what = "source tree" if _from_builds(self.engine) else "wheel"
        return f"{self.facts['source']} (read from the {self.engine} {self.version} {what})"

    # -- launch flags
    @property
    def flag_window(self) -> tuple[str, ...]:
        """The releases of this engine whose launch flags are bundled, oldest first."""
        return flag_versions(self.engine)

    @property
    def flags(self) -> Optional[dict[str, Any]]:
        """{"flags": {name: [file, line]}, ...}: the launch flags of this release, read from its argument
        parser (None: none bundled for this release)."""
        return _flags_file().get(self.engine, {}).get(self.version)

    # -- verdicts the facts give directly
    def target_support(self, architectures: Sequence[str]) -> tuple[Support, list[str]]:
        """Verdict for a target's `architectures`, and the class names it rests on: any listed supported
        class wins; then any listed unsupported one; else unknown."""
        supported = [a for a in architectures if a in self.names("supported")]
        if supported:
            return "supported", supported
        unsupported = [a for a in architectures if a in self.names("unsupported")]
        if unsupported:
            return "unsupported", unsupported
        return "unknown", list(architectures)


@cache
def _names(engine: str, version: str, kind: str) -> frozenset[str]:
    return frozenset(_facts(engine, version).get(kind, ()))


@cache
def release(engine: str, version: Optional[str] = None) -> Release:
    """`engine` at `version` (None: the newest bundled release). KeyError for an unknown engine."""
    if engine not in ENGINES:
        raise KeyError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    return Release(engine, version or _newest(engine))


def located(engine: str, name: str, kind: str = "where", note: Optional[str] = None) -> EngineSource:
    """A rule's citation of a located fact of `engine` (its newest bundled release): for engines whose facts
    name their own lines (llama.cpp builds). At a check, `Release.where` gives the selected release's."""
    src = release(engine).source(kind, name)
    return src if note is None else EngineSource(src.engine, src.path, src.lines, note, src.version)


# ---- across engines and releases ------------------------------------------------------------------


def newest_versions() -> dict[str, str]:
    """The newest bundled release of every engine."""
    return {name: bundled_versions(name)[-1] for name in ENGINES if bundled_versions(name)}


def recurrent_model_types() -> frozenset[str]:
    """Model types whose cache cropping cannot roll back (stateful / linear-attention / SSM / conv layers),
    over every bundled release."""
    return frozenset(_index()["common"]["recurrent_model_types"])


def flag_versions(engine: str) -> tuple[str, ...]:
    """The releases of `engine` whose launch flags are bundled, oldest first."""
    key = ENGINES[engine].key if engine in ENGINES else None
    return tuple(sorted(_flags_file().get(engine, {}), key=key))


def draft_support(architecture: str, versions: Optional[dict[str, str]] = None) -> dict[str, dict[str, Any]]:
    """What each engine does with a draft whose config.json `architectures` names this class:
    {"vllm": {"loads", "cls", "v2_speculator", "v1_refuses"}, "sglang": {"loads", "cls"},
    "dflash": {"loads"}}. `versions`: engine -> release (default: the newest bundled)."""
    versions = versions or {}
    vllm, sglang, dflash = (release(e, versions.get(e)) for e in ("vllm", "sglang", "dflash"))
    return {
        "vllm": {
            "loads": architecture in vllm.names("draft_architectures"),
            "cls": vllm["draft_architectures_classes"].get(architecture),
            "v2_speculator": vllm.get("draft_v2_speculators", {}).get(architecture),
            "v1_refuses": architecture in vllm.names("draft_v1_refused"),
        },
        "sglang": {
            "loads": architecture in sglang.names("draft_architectures"),
            "cls": sglang["draft_architectures_classes"].get(architecture),
        },
        "dflash": {"loads": architecture in dflash.names("draft_architectures")},
    }
