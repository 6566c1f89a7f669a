"""A checkpoint's files, found and checked before a runtime loads them (pure Python, shared by both runtimes).

Target and draft weights go through the one checked lookup (`dflash_compat.files.weightfiles`): index
names that stay in the folder, regular files only, no symlinks out, safetensors only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from dflash_compat.exceptions import WeightsError
from dflash_compat.files.weightfiles import weight_paths
from dflash_compat.runtime.draft_config import DraftConfig

__all__ = ["target_folder", "DraftCheckpoint", "draft_checkpoint", "draft_files", "check_state"]

_NO_WEIGHTS = "no *.safetensors files (pickled .bin weights are never loaded)"


def target_folder(ref: Union[str, Path], *, token: Optional[str] = None, trust_remote_code: bool = False) -> Path:
    """The local folder of a target (a folder, or a Hub snapshot of its safetensors, JSON and
    tokenizer files), after the checked weight lookup: WeightsError in one line otherwise."""
    from dflash_compat.resolve.refs import download_weights, resolve

    resolved = resolve(str(ref), "target", token=token)
    folder = Path(download_weights(resolved, token=token, trust_remote_code=trust_remote_code))
    if not weight_paths(folder, f"target {ref}"):
        raise WeightsError(f"target {ref}: {_NO_WEIGHTS}")
    return folder


def draft_files(folder: Union[str, Path]) -> list[Path]:
    """A draft folder's checked safetensors files (its index's shards, else every `*.safetensors`)."""
    files = weight_paths(Path(folder), f"draft {folder}")
    if not files:
        raise WeightsError(f"draft {folder}: {_NO_WEIGHTS}")
    return files


@dataclass(frozen=True)
class DraftCheckpoint:
    """A z-lab draft on disk: its raw config.json, the resolved settings, and its weight files."""

    raw: dict[str, Any]
    cfg: DraftConfig
    files: list[Path]


def draft_checkpoint(ref: Union[str, Path], *, token: Optional[str] = None) -> DraftCheckpoint:
    """Resolve a draft (a local folder or a Hub repo id), read its config the way `dflash-check check`
    does (DraftSpec) and find its weight files."""
    from dflash_compat.resolve.refs import download_weights, resolve
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.specs import parse_draft_config

    resolved = resolve(str(ref), "draft", token=token)
    folder = download_weights(resolved, token=token)
    raw = resolved.json("config.json")
    cfg = draft_config(parse_draft_config(raw, str(ref)))
    return DraftCheckpoint(raw, cfg, draft_files(folder))


def _listed(names: list[str]) -> str:
    return ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")


def check_state(expected: dict[str, tuple[int, ...]], loaded: dict[str, tuple[int, ...]], where: str) -> None:
    """The loaded tensors (name -> shape) must be exactly the modules' parameters, shape for shape:
    strict loading would fail mid-way, and a missing tensor would stay uninitialised."""
    missing = sorted(set(expected) - set(loaded))
    unexpected = sorted(set(loaded) - set(expected))
    if missing or unexpected:
        parts = ([f"missing {_listed(missing)}"] if missing else []) + \
                ([f"unexpected {_listed(unexpected)}"] if unexpected else [])
        raise WeightsError(f"{where}: weights do not match the config ({'; '.join(parts)})")
    for name, shape in expected.items():
        if tuple(loaded[name]) != tuple(shape):
            raise WeightsError(f"{where}: {name} has shape {list(loaded[name])}, the config implies {list(shape)}")
