"""Which safetensors files make up a model folder: the one checked lookup that probes and runtimes share.

A model folder is untrusted input. Its shard index may name only plain file names beside it, every
weight file must be a regular file (a FIFO or a device would block the reader forever), and a
symlink may not lead out of the folder (except into the Hugging Face cache's blob store of the same
repo, where the Hub's snapshots keep their files). Nothing here opens a weight file or imports a
framework; the index is read with O_NONBLOCK and checked with fstat before a byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional

from dflash_compat.exceptions import WeightsError, one_line
from dflash_compat.files.safe_read import file_kind, parse_json, read_text
from dflash_compat.quoting import quote, quote_items

__all__ = [
    "INDEX_FILE",
    "PickledShardsError",
    "index_shards",
    "local_weight_files",
    "weight_paths",
    "refuse_special_files",
    "refuse_link_out",
]

INDEX_FILE = "model.safetensors.index.json"
MAX_INDEX_BYTES = 64 * 1024 * 1024  # a real index lists tensors by name: a few MB at most


class PickledShardsError(WeightsError):
    """An index names weight files that are not safetensors (.bin, .pt: pickles); none is ever opened.
    The checker reports it as a skip (DF007 pickle-shards); every other reader stops with it."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(f"{INDEX_FILE} lists {quote_items(names)}, not safetensors; pickled weights are never "
                         "opened")


def _is_plain_name(name: str) -> bool:
    """A file name beside the index: no separators, no parent or hidden names, no absolute paths."""
    return 0 < len(name) <= 255 and not any(c in name for c in "/\\\0") and not name.startswith(".")


def index_shards(index_path: Path) -> tuple[list[str], dict[str, str]]:
    """The shard file names an index lists (sorted, each once) and its tensor -> file map. WeightsError in
    one line for an unreadable index (safe_read's bounds: a regular file, size and nesting capped), a
    missing map, or a value that is not a plain file name; PickledShardsError for names that are not
    `*.safetensors`."""
    name = index_path.name
    what = f"{name}: unreadable index"
    index = parse_json(read_text(index_path, MAX_INDEX_BYTES, what=what, error=WeightsError), what=what,
                       error=WeightsError)
    wmap = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        raise WeightsError(f"{name}: corrupt index (no weight_map of tensor -> file)")
    for tensor, shard in wmap.items():
        if not isinstance(shard, str):
            raise WeightsError(
                f"{name}: corrupt index (the file of {quote(tensor, chars=80)} is {quote(shard, chars=40)}, "
                "not a file name)")
        # An index must name files beside it; never follow paths out of the model folder.
        if not _is_plain_name(shard):
            raise WeightsError(f"{name}: corrupt index (shard name {quote(shard, chars=80)} is not a file name)")
    names = sorted(set(wmap.values()))
    pickled = [n for n in names if not n.endswith(".safetensors")]
    if pickled:  # never opened, not even for 8 bytes: a weight file that is not safetensors is a pickle
        raise PickledShardsError(pickled)
    return names, wmap


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


def refuse_link_out(path: Path, folder: Path) -> None:
    """WeightsError when `path` (a file of the model in `folder`) is a symlink leading out of the folder."""
    _check_inside(path, _allowed_roots(folder))


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
            raise WeightsError(f"{who}: {entry.name[:120]!r} is {file_kind(mode)}, not a regular file; "
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
