"""Which engine releases a launch is judged at: the project-wide selection (`engines.registry.select_versions`)
with what the launch file pins: `--engine-version` (option), else the image tag of the container the
launch runs in or a pip pin in the same file (origin `launch-file`), else the settings file's
`engine-versions` (config), else the newest bundled release (`default`). What is installed on this
machine does not count: a launch file describes a deployment elsewhere.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from dflash_compat.engines.registry import ENGINES, Versions, select_versions
from dflash_compat.launch.parse import Launch, image_version

__all__ = ["pinned", "launch_versions"]


def pinned(launch: Launch, pins: Mapping[str, Any]) -> Optional[tuple[str, str, int, int]]:
    """(version, where it is written, line, column) of the launch engine's release the file pins: the image
    tag of the container the launch runs in, else a pip pin in the same file (`sources.Pin`); None when it pins
    none that the engine's version order can read."""
    engine = launch.engine
    found: Optional[tuple[str, str, int, int]] = None
    tagged = image_version(launch.image)
    if tagged:
        found = (tagged, f"image {launch.image} (line {launch.image_line})", launch.image_line, launch.image_column)
    elif engine in pins:
        pin = pins[engine]
        found = (pin.version, f"pip pin on line {pin.line}", pin.line, pin.column)
    if found is None or engine not in ENGINES:
        return None
    try:
        ENGINES[engine].key(found[0])
    except ValueError:
        return None
    return found


def launch_versions(launch: Launch, pins: Mapping[str, Any], options: Mapping[str, str],
                    config: Mapping[str, str] = {}) -> Versions:  # noqa: B006 (read only)
    """The releases a launch is judged at. `options`: --engine-version as engine -> version; `config`: the
    settings file's engine-versions table."""
    pin = pinned(launch, pins)
    return select_versions(option=tuple(f"{k}=={v}" for k, v in options.items()), config=dict(config),
                           launch={launch.engine: pin[0]} if pin else {},
                           details={launch.engine: pin[1:]} if pin else {}, installed=False)
