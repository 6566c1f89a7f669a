"""Which engine version a launch is judged at: `--engine-version` (option), else what the launch file pins
(the image tag of the container it runs in, else a pip pin in the same file: origin `launch-file`), else
the settings file's `engine-versions` (config), else the newest release whose flags are bundled
(`default`): the precedence of the project-wide selection.

The one place that knows about version selection, kept small so that the project-wide selection
(`dflash_compat.engines.registry.select_versions(launch=...)`, where present) plugs in here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from dflash_compat.engines.flags import newest
from dflash_compat.launch.parse import Launch, image_version

__all__ = ["LaunchVersion", "select_version", "pair_versions"]


@dataclass(frozen=True)
class LaunchVersion:
    engine: str
    version: Optional[str]  # None: no version stated and none bundled
    origin: str  # "option", "launch-file" or "default"
    detail: str = ""  # e.g. "image vllm/vllm-openai:v0.34.0 (line 3)"

    def describe(self) -> str:
        where = f": {self.detail}" if self.detail else ""
        return f"{self.engine} {self.version or '(unknown)'} ({self.origin}{where})"


def select_version(launch: Launch, pins: Mapping[str, tuple[str, int]], options: Mapping[str, str],
                   config: Mapping[str, str] = {}) -> LaunchVersion:  # noqa: B006 (read only)
    engine = launch.engine
    if engine in options:
        return LaunchVersion(engine, options[engine], "option", "--engine-version")
    tagged = image_version(launch.image)
    if tagged:
        return LaunchVersion(engine, tagged, "launch-file", f"image {launch.image} (line {launch.image_line})")
    if engine in pins:
        version, line = pins[engine]
        return LaunchVersion(engine, version, "launch-file", f"pip pin on line {line}")
    if engine in config:
        return LaunchVersion(engine, config[engine], "config", "engine-versions in the settings file")
    return LaunchVersion(engine, newest(engine), "default", "newest bundled")


def pair_versions(selected: LaunchVersion, options: Mapping[str, str],
                  config: Mapping[str, str] = {}) -> Optional[object]:  # noqa: B006 (read only)
    """The project's version selection for the pair check, where the branch that adds it is present
    (`engine_versions.select_versions`); None keeps `check`'s own default."""
    try:
        from dflash_compat.engines import registry as engine_versions  # type: ignore[attr-defined]
    except ImportError:
        return None
    engine = selected.engine  # only this launch's engine: another's name may not be registered there
    launch = {engine: selected.version} if selected.origin == "launch-file" and selected.version else {}
    return engine_versions.select_versions(option=tuple(f"{k}=={v}" for k, v in options.items() if k == engine),
                                           config={k: v for k, v in config.items() if k == engine}, launch=launch)
