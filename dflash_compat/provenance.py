"""`EngineSource`: where an engine decides something the checker says (engine, release, file:line)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineSource"]


@dataclass(frozen=True)
class EngineSource:
    """Where an engine decides what a rule says: a file and line range in that engine's release
    (`contract.ENGINE_VERSIONS` names the version), relative to the wheel's top package."""

    engine: str  # a key of contract.ENGINE_VERSIONS
    path: str  # e.g. "vllm/config/speculative.py"
    lines: str  # "1614" or "1614-1620"
    note: str = ""  # what these lines decide, in a few words

    def cite(self) -> str:
        from .contract import ENGINE_BUILDS, ENGINE_VERSIONS

        version = ENGINE_VERSIONS.get(self.engine) or ENGINE_BUILDS[self.engine]
        return f"{self.engine} {version} {self.path}:{self.lines}"
