"""`EngineSource`: where an engine decides something the checker says (engine, release, file:line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["EngineSource"]


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
        from dflash_compat.engines.registry import SOURCE_ENGINE_VERSIONS, bundled_versions

        v = version or (bundled_versions(self.engine) or (SOURCE_ENGINE_VERSIONS.get(self.engine, "?"),))[-1]
        try:
            from dflash_compat.engines.store import cite_lines

            return v, cite_lines(self.engine, self.path, self.lines, v)
        except (KeyError, OSError, ValueError):  # no anchor (a located fact, or not refreshed yet): as given
            return (self.version or v), self.lines

    def cite(self, version: Optional[str] = None) -> str:
        """"vllm 0.34.0 vllm/config/speculative.py:1614-1620"; `version` None: the newest bundled release."""
        v, lines = self.at(version)
        if lines is None:
            return f"{self.engine} {v} {self.path}: not in this release (anchor gone)"
        return f"{self.engine} {v} {self.path}:{lines}"
