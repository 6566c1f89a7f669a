"""Which safetensors files make up a model folder: the one checked lookup that probes and runtimes share.

A model folder is untrusted input. Its shard index may name only plain file names beside it, every
weight file must be a regular file (a FIFO or a device would block the reader forever), and a
symlink may not lead out of the folder (except into the Hugging Face cache's blob store of the same
repo, where the Hub's snapshots keep their files). Nothing here opens a weight file or imports a
framework; the index is read with O_NONBLOCK and checked with fstat before a byte is read.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Optional

from .exceptions import WeightsError, one_line

__all__ = [
    "INDEX_FILE",
    "load_json",
    "read_regular_text",
    "index_shards",
    "local_weight_files",
    "weight_paths",
    "refuse_special_files",
]

INDEX_FILE = "model.safetensors.index.json"
MAX_INDEX_BYTES = 64 * 1024 * 1024  # a real index lists tensors by name: a few MB at most

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def load_json(text: str) -> Any:
    """json.loads that turns every way hostile JSON fails (deep nesting, >4300-digit integers) into ValueError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_text(path: Path, limit: int) -> str:
    """A small text file's contents; OSError / ValueError if it is not a regular file of at most `limit` bytes.
    O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; fstat then refuses it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        mode, size = os.fstat(fd).st_mode, os.fstat(fd).st_size
        if not stat.S_ISREG(mode):
            raise ValueError(f"{_kind(mode)}, not a regular file")
        if size > limit:
            raise ValueError(f"{size} bytes, more than the {limit} allowed")
        return fh.read(limit + 1).decode("utf-8")


def _is_plain_name(name: str) -> bool:
    """A file name beside the index: no separators, no parent or hidden names, no absolute paths."""
    return 0 < len(name) <= 255 and not any(c in name for c in "/\\\0") and not name.startswith(".")


def index_shards(index_path: Path) -> tuple[list[str], dict[str, str]]:
    """The shard file names an index lists (sorted, each once) and its tensor -> file map; WeightsError
    in one line for an unreadable index, a missing map, or a value that is not a plain file name."""
    name = index_path.name
    try:
        index = load_json(read_regular_text(index_path, MAX_INDEX_BYTES))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, JSONDecodeError, too deep, not a file
        raise WeightsError(f"{name}: unreadable index ({one_line(exc)})") from None
    wmap = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        raise WeightsError(f"{name}: corrupt index (no weight_map of tensor -> file)")
    for tensor, shard in wmap.items():
        if not isinstance(shard, str):
            raise WeightsError(
                f"{name}: corrupt index (the file of {repr(tensor)[:80]} is {repr(shard)[:40]}, not a file name)")
        # An index must name files beside it; never follow paths out of the model folder.
        if not _is_plain_name(shard):
            raise WeightsError(f"{name}: corrupt index (shard name {repr(shard)[:80]} is not a file name)")
    return sorted(set(wmap.values())), wmap


def _allowed_roots(folder: Path) -> list[Path]:
    """Where the folder's files may really live: the folder, and for a Hub cache snapshot
    (<cache>/models--org--name/snapshots/<rev>) the repo's blob store beside it."""
    root = folder.resolve()
    roots = [root]
    repo = root.parent.parent
    if root.parent.name == "snapshots" and repo.name.startswith(("models--", "datasets--", "spaces--")):
        roots.append(repo / "blobs")
    return roots


def _check_inside(path: Path, roots: list[Path]) -> None:
    """Refuse a symlink whose target lies outside the model folder (and outside the Hub blob store)."""
    if not path.is_symlink():
        return
    real = path.resolve()
    if not any(real == r or r in real.parents for r in roots):
        raise WeightsError(
            f"{path.name}: a symlink to {str(real)[:120]}, outside the model folder; files outside it are never read")


def local_weight_files(folder: Path) -> tuple[list[str], Optional[dict[str, str]]]:
    """The safetensors files a folder's model consists of (the index's shards, else every regular
    `*.safetensors` file beside config.json), and the index's weight map (None without an index).
    Names are checked, not the files' presence: a Hub snapshot may hold an index without its shards."""
    roots = _allowed_roots(folder)
    index = folder / INDEX_FILE
    if index.is_file():
        _check_inside(index, roots)
        names, wmap = index_shards(index)
        for n in names:
            if os.path.lexists(folder / n):
                _check_inside(folder / n, roots)
        return names, wmap
    files = []
    for p in sorted(folder.glob("*.safetensors")):
        if p.is_file():  # stat, never open: FIFOs, sockets and devices are not weights
            _check_inside(p, roots)
            files.append(p.name)
    return files, None


def refuse_special_files(folder: Path, who: str) -> None:
    """Refuse a folder with a FIFO, socket or device among its files: the libraries that load a
    model (transformers, mlx-lm, tokenizers) open files by name and would block on one forever."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise WeightsError(f"{who}: cannot list {folder} ({exc.strerror or one_line(exc)})") from None
    for entry in entries:
        try:
            mode = os.stat(entry.path).st_mode  # follows symlinks; never opens
        except OSError:
            continue  # a dangling symlink: nothing to open
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise WeightsError(f"{who}: {entry.name[:120]!r} is {_kind(mode)}, not a regular file; "
                               "a model folder holds regular files only")


def weight_paths(folder: Path, who: str) -> list[Path]:
    """The checked weight files a runtime loads from `folder`: listed by the index (or the regular
    `*.safetensors` files), each present, regular and inside the folder; no FIFO, socket or device
    anywhere in the folder. [] when the folder has no safetensors file at all."""
    folder = Path(folder)
    refuse_special_files(folder, who)
    try:
        names, wmap = local_weight_files(folder)
    except WeightsError as exc:
        raise WeightsError(f"{who}: {exc}") from None
    paths = [folder / n for n in names]
    for path in paths:
        if not path.is_file():
            listed = f"listed in {INDEX_FILE} " if wmap is not None else ""
            raise WeightsError(f"{who}: shard {path.name} {listed}is missing; download it again")
    return paths
