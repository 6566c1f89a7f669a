"""What a launch-level rule (DF901-DF999) sees: the launch, the engine version it is judged at and that
version's flag facts, the pair's specs when they could be read, and the launches before it in its file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from dflash_compat.checker.findings import Location
from dflash_compat.launch.parse import Launch
from dflash_compat.launch.shellwords import Word
from dflash_compat.launch.versions import LaunchVersion

if TYPE_CHECKING:
    from dflash_compat.specs import DraftSpec, TargetSpec

__all__ = ["FileLocation", "LaunchContext"]


@dataclass(frozen=True)
class FileLocation(Location):
    """A place in a user's launch file (`dflash-check launch`): `file` is its path as given, `line` and
    `column` 1-based; `key` names the flag or setting written there. (Here, not with Location in
    findings: a config-only check never builds one, and every dataclass costs start-up time.)"""

    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class LaunchContext:
    launch: Launch
    version: LaunchVersion
    flags: Optional[dict[str, Any]]  # flag facts at version.version (None: none bundled for it)
    draft: Optional["DraftSpec"] = None
    target: Optional["TargetSpec"] = None
    earlier: tuple[Launch, ...] = ()  # the launches before this one in the same file
    pair_skipped: Optional[str] = None  # why the pair check did not run (None: it ran)

    def at(self, setting: Optional[str] = None, word: Optional[Word] = None) -> FileLocation:
        """The file location of a setting (where its value is written), of a word, else of the launch."""
        w = word or (self.launch.where.get(setting) if setting else None)
        if w is None:
            return FileLocation("launch", self.launch.file, setting or self.launch.engine, self.launch.line,
                                self.launch.column)
        return FileLocation("launch", self.launch.file, setting or w.text[:60], w.line, w.column)

    def setting(self, name: str) -> Any:
        return self.launch.settings.get(name)
