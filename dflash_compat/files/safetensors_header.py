"""Safetensors headers read bounded from local files (8-byte length + JSON): names, dtypes, shapes and
offsets of the tensors.

No tensor data is ever read, and nothing here imports torch, numpy or safetensors.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dflash_compat.exceptions import WeightsError
from dflash_compat.files.safe_read import file_kind, parse_json
from dflash_compat.files.weightfiles import INDEX_FILE, local_weight_files

__all__ = [
    "DTYPE_BITS",
    "DTYPE_BYTES",
    "tensor_bytes",
    "FileHeader",
    "read_header",
    "read_local_headers",
]

SINGLE_FILE = "model.safetensors"
# The safetensors format caps the header at 100 MB; anything larger is corruption, not a model.
MAX_HEADER_BYTES = 100_000_000

# Bits per element of each safetensors dtype (sizes are computed in integers: shapes can be huge).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
# Bytes per element (sub-byte types as fractions), for readers of the old table.
DTYPE_BYTES: dict[str, float] = {k: v / 8 for k, v in DTYPE_BITS.items()}


def tensor_bytes(dtype: str, shape: list[int]) -> Optional[int]:
    """Bytes a tensor's data takes (sub-byte types rounded up to whole bytes); None for an unknown dtype."""
    bits = DTYPE_BITS.get(dtype)
    return None if bits is None else (_prod(shape) * bits + 7) // 8


@dataclass
class FileHeader:
    """One safetensors file's header: tensor name -> (dtype, shape), plus what the data section holds."""

    name: str
    tensors: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    data_bytes_declared: int = 0
    data_bytes_present: Optional[int] = None  # None: unknown (remote header)


_PROD_CAP = 1 << 80  # past any real tensor (offsets are u64): stop multiplying, the header is corrupt anyway


def _prod(shape: list[int]) -> int:
    if 0 in shape:
        return 0
    n = 1
    for s in shape:
        n *= s
        if n > _PROD_CAP:
            return n  # hostile shapes (thousands of huge dims) must not cost minutes of bignum work
    return n


def _short(n: int) -> str:
    """An integer for a message: huge ones (hostile headers) abbreviated, never str() of 4300+ digits."""
    return str(n) if n.bit_length() < 64 else f"about 2**{n.bit_length() - 1}"


def _parse_header(name: str, raw: bytes) -> FileHeader:
    """Validate a header's JSON (the bytes after the 8-byte length); raises WeightsError."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WeightsError(f"{name}: corrupt safetensors header (not UTF-8 text)") from None
    # safe_read's parser: syntax errors, nesting and integers past 64 bits are one WeightsError line
    doc = parse_json(text, what=f"{name}: corrupt safetensors header (not JSON)", error=WeightsError)
    if not isinstance(doc, dict):
        raise WeightsError(f"{name}: corrupt safetensors header (not a JSON object)")
    out = FileHeader(name=name)
    meta = doc.pop("__metadata__", None)
    if isinstance(meta, dict):
        out.metadata = {str(k): str(v) for k, v in meta.items()}
    end_max = 0
    for tname, info in doc.items():
        if not isinstance(info, dict):
            raise WeightsError(f"{name}: corrupt safetensors header (entry {tname!r} is not an object)")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str):
            raise WeightsError(f"{name}: corrupt safetensors header ({tname!r} has no dtype)")
        if not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise WeightsError(
                f"{name}: corrupt safetensors header ({tname!r} has an invalid shape {repr(shape)[:80]})")
        if (
            not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]
        ):
            raise WeightsError(
                f"{name}: corrupt safetensors header ({tname!r} has invalid data_offsets {repr(offsets)[:80]})")
        size = tensor_bytes(dtype, shape)
        if size is not None and offsets[1] - offsets[0] != size:
            raise WeightsError(
                f"{name}: corrupt safetensors header ({tname!r}: {dtype} shape of {len(shape)} dims needs "
                f"{_short(size)} bytes, its offsets span {_short(offsets[1] - offsets[0])})"
            )
        out.tensors[tname] = (dtype, list(shape))
        end_max = max(end_max, offsets[1])
    out.data_bytes_declared = end_max
    return out


def read_header(path: Path, name: Optional[str] = None) -> FileHeader:
    """Read only the first 8 + N bytes of a safetensors file (N: the little-endian header length)."""
    name = name or path.name
    try:
        # O_NONBLOCK: a FIFO named like a weight file returns at once (never waits for a writer); fstat refuses it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise WeightsError(f"{name}: is {file_kind(info.st_mode)}, not a regular file")
            total = info.st_size
            head = fh.read(8)
            if len(head) < 8:
                raise WeightsError(f"{name}: truncated ({total} bytes): no safetensors header; download it again")
            (length,) = struct.unpack("<Q", head)
            if length == 0 or length > MAX_HEADER_BYTES:
                raise WeightsError(f"{name}: corrupt: header length {length} is not a safetensors header")
            if 8 + length > total:
                raise WeightsError(
                    f"{name}: truncated: the header needs {8 + length} bytes, the file has {total}; download it again"
                )
            raw = fh.read(length)
    except WeightsError:
        raise
    except OSError as exc:
        raise WeightsError(f"{name}: cannot read ({exc.strerror or exc})") from None
    if len(raw) < length:
        raise WeightsError(f"{name}: truncated while reading its header; download it again")
    header = _parse_header(name, raw)
    header.data_bytes_present = total - 8 - length
    return header


def read_local_headers(folder: Path, hub_snapshot: bool = False) -> list[FileHeader]:
    """Headers of every safetensors file of the model in `folder`; [] when it holds none.

    Only a Hub snapshot (`hub_snapshot`: resolve() fetched the JSON files, not the weights) may
    hold an index without any of its shards; in a local folder that is a broken download."""
    files, wmap = local_weight_files(folder)  # PickledShardsError for an index naming pickles: never opened
    missing = [f for f in files if not (folder / f).is_file()]
    if missing and wmap is not None and len(missing) == len(files) and hub_snapshot:
        return []  # a config-only snapshot: nothing local to read, the Hub header API is asked instead
    if missing:
        raise WeightsError(f"{folder}: shard {missing[0]} listed in {INDEX_FILE} is missing; download it again")
    headers = [read_header(folder / f, f) for f in files]
    if wmap is not None:
        _check_index(headers, wmap)
    return headers


def _check_index(headers: list[FileHeader], wmap: dict[str, str]) -> None:
    by_name = {h.name: h for h in headers}
    for tensor, shard in wmap.items():
        if tensor not in by_name[shard].tensors:
            raise WeightsError(f"{shard}: {INDEX_FILE} lists {tensor!r} in it, its header does not")
