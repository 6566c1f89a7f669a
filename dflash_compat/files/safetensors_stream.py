"""Copy tensors between safetensors files by their header offsets, one bounded chunk at a time.

A tensor's bytes are never interpreted or held whole: each is copied from its byte range in the source
file to the output in chunks of at most CHUNK_BYTES, so memory stays flat whatever the model's size.
No torch, numpy or safetensors import.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Optional

from dflash_compat.exceptions import WeightsError
from dflash_compat.files.safetensors_header import MAX_HEADER_BYTES, read_header

__all__ = ["CHUNK_BYTES", "SourceTensor", "read_tensors", "write_tensors"]

CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class SourceTensor:
    """Where one tensor's bytes are: file, absolute byte offset and length, with its dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path
    start: int
    nbytes: int


def read_tensors(path: Path) -> tuple[dict[str, str], list[SourceTensor]]:
    """(__metadata__, tensors in file order) of a complete safetensors file; WeightsError otherwise."""
    header = read_header(path)  # validates the header: one-line errors for truncated or corrupt files
    if header.data_bytes_present is not None and header.data_bytes_present < header.data_bytes_declared:
        raise WeightsError(
            f"{path.name}: holds {header.data_bytes_present} bytes of tensor data, its header declares "
            f"{header.data_bytes_declared}: the file is truncated; download it again"
        )
    with open(path, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        doc = json.loads(fh.read(length).decode("utf-8"))  # read_header parsed this already: it is valid
    base = 8 + length
    out = []
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out.append(SourceTensor(name, info["dtype"], tuple(info["shape"]), path, base + begin, end - begin))
    out.sort(key=lambda t: t.start)  # read each file front to back
    return header.metadata, out


def _header_blob(tensors: list[tuple[str, SourceTensor]], metadata: Optional[dict[str, str]]) -> bytes:
    doc: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, t in tensors:
        doc[name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    blob = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # the data section starts 8-byte aligned, as safetensors writes it
    if len(blob) > MAX_HEADER_BYTES:
        raise WeightsError(f"the output header would be {len(blob)} bytes, over the safetensors limit")
    return blob


def _copy_range(src: BinaryIO, start: int, nbytes: int, dst: BinaryIO, buf: bytearray) -> None:
    src.seek(start)
    view = memoryview(buf)
    left = nbytes
    while left:
        n = src.readinto(view[: min(left, len(buf))])
        if not n:
            raise WeightsError(f"{Path(src.name).name}: ended {left} bytes early while copying a tensor")
        dst.write(view[:n])
        left -= n


def write_tensors(out: Path, tensors: Iterable[tuple[str, SourceTensor]],
                  metadata: Optional[dict[str, str]] = None) -> int:
    """Write (new name, source tensor) pairs, in order, to a new safetensors file; returns its data bytes."""
    items = list(tensors)
    blob = _header_blob(items, metadata)
    buf = bytearray(CHUNK_BYTES)
    handles: dict[Path, BinaryIO] = {}
    try:
        with open(out, "xb") as dst:
            dst.write(struct.pack("<Q", len(blob)) + blob)
            for _, t in items:
                src = handles.get(t.file) or handles.setdefault(t.file, open(t.file, "rb"))
                _copy_range(src, t.start, t.nbytes, dst, buf)
    finally:
        for fh in handles.values():
            fh.close()
    return sum(t.nbytes for _, t in items)
