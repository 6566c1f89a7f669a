"""GGUF headers, read bounded: magic, version, the typed key/value metadata and the tensor infos.

A GGUF file (llama.cpp's model format) starts with its metadata: `GGUF`, a version, two counts, then
`kv_count` typed key/value pairs and `tensor_count` tensor descriptions (name, dims, ggml type, data
offset). Only that prefix is read, front to back through a bounded reader: never the tensor data,
never a memory map of the whole file (the `gguf` package's GGUFReader maps it all). A GGUF named on
the command line or found in a model folder is untrusted input, so every count, length and depth is
capped, a FIFO or device is refused before a byte is read (O_NONBLOCK + fstat), and any failure is
one line in WeightsError. Long arrays (a tokenizer's 150,000 tokens) are kept as their type, length
and a SHA-256 of their contents, not as values. Standard library only.

Layout (llama.cpp b11434 ggml/src/gguf.cpp, gguf_init_from_file_impl; the same in gguf-py's
GGUFReader): little-endian; strings are a u64 byte length then UTF-8 bytes; counts are u64 from
version 2 on (version 1 is refused, as llama.cpp refuses it).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

from dflash_compat.exceptions import WeightsError
from dflash_compat.files.safe_read import file_kind

__all__ = [
    "GGUF_MAGIC",
    "MAX_GGUF_HEADER_BYTES",
    "GGUFArray",
    "arch_get",
    "GGUFHeader",
    "GGML_TYPES",
    "parse_gguf_header",
    "read_gguf_header",
    "is_gguf_file",
]

GGUF_MAGIC = b"GGUF"
# The header of the largest published GGUFs (262k-token vocabularies with scores, merges and a chat
# template, a few thousand tensors) is tens of MB; more than this is corruption or an attack.
MAX_GGUF_HEADER_BYTES = 512 * 1024 * 1024
MAX_KV = 100_000
MAX_TENSORS = 1_000_000
MAX_KEY_BYTES = 65_535  # llama.cpp's own key length cap
MAX_STRING_BYTES = 64 * 1024 * 1024
MAX_ARRAY_LEN = 64 * 1024 * 1024
MAX_ARRAY_DEPTH = 2  # GGUF allows arrays of arrays; no model writes deeper than one level
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_DIM = 1 << 40
# Arrays up to this length are kept as values (target_layers, dimension_sections, per-layer patterns).
KEEP_ARRAY_LEN = 4096

# GGUF value types (ggml/include/gguf.h enum gguf_type): code -> (name, struct format or None).
_TYPES: dict[int, tuple[str, Optional[str]]] = {
    0: ("uint8", "<B"), 1: ("int8", "<b"), 2: ("uint16", "<H"), 3: ("int16", "<h"), 4: ("uint32", "<I"),
    5: ("int32", "<i"), 6: ("float32", "<f"), 7: ("bool", "<?"), 8: ("string", None), 9: ("array", None),
    10: ("uint64", "<Q"), 11: ("int64", "<q"), 12: ("float64", "<d"),
}
# ggml tensor types (ggml/include/ggml.h enum ggml_type), by number; unknown numbers are kept as "type N".
GGML_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
    27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

Scalar = Union[int, float, bool, str]


@dataclass(frozen=True)
class GGUFArray:
    """A metadata array too long to keep: its element type, length and a SHA-256 of its elements
    (two vocabularies with the same digest hold the same tokens in the same order)."""

    type: str
    count: int
    sha256: str


def arch_get(kv: dict[str, Any], architecture: Optional[str], key: str, default: Any = None) -> Any:
    """kv[key], with `{arch}` in the key standing for the model's general.architecture; `default` when the
    key is missing or names `{arch}` without an architecture."""
    if "{arch}" in key:
        if architecture is None:
            return default
        key = key.replace("{arch}", architecture)
    return kv.get(key, default)


@dataclass
class GGUFHeader:
    """What a GGUF file's header says. Tensor shapes are in ggml order (ne[0] first: the innermost,
    row-length dimension), which is the reverse of the safetensors / PyTorch shape."""

    name: str
    version: int
    kv: dict[str, Any] = field(default_factory=dict)
    kv_types: dict[str, str] = field(default_factory=dict)
    tensors: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    header_bytes: int = 0
    file_bytes: Optional[int] = None

    @property
    def architecture(self) -> Optional[str]:
        value = self.kv.get("general.architecture")
        return value if isinstance(value, str) else None

    def get(self, key: str, default: Any = None) -> Any:
        """A value by key; `{arch}` in the key stands for general.architecture (`{arch}.block_count`)."""
        return arch_get(self.kv, self.architecture, key, default)

    def array_len(self, key: str) -> Optional[int]:
        value = self.get(key)
        if isinstance(value, GGUFArray):
            return value.count
        if isinstance(value, list):
            return len(value)
        return None


class _Reader:
    """Reads a stream front to back, failing in one line on a short read or past the byte cap."""

    def __init__(self, fh: BinaryIO, name: str, limit: int) -> None:
        self.fh, self.name, self.limit, self.pos = fh, name, limit, 0

    def fail(self, why: str) -> WeightsError:
        return WeightsError(f"{self.name}: corrupt GGUF header ({why})")

    def read(self, n: int) -> bytes:
        if self.pos + n > self.limit:
            raise WeightsError(f"{self.name}: the GGUF header runs past {self.limit} bytes; not read further")
        data = self.fh.read(n)
        if data is None or len(data) < n:
            raise WeightsError(f"{self.name}: truncated GGUF header (ended at byte {self.pos + len(data or b'')}); "
                               "download it again")
        self.pos += n
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self, cap: int, what: str) -> str:
        n = self.unpack("<Q")
        if n > cap:
            raise self.fail(f"{what} of {n} bytes, more than {cap}")
        raw = self.read(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None


def _value(r: _Reader, code: int, key: str, depth: int) -> Any:
    kind = _TYPES.get(code)
    if kind is None:
        raise r.fail(f"{key!r} has unknown value type {code}")
    name, fmt = kind
    if fmt is not None:
        return r.unpack(fmt)
    if name == "string":
        return r.string(MAX_STRING_BYTES, f"the value of {key!r}")
    if depth >= MAX_ARRAY_DEPTH:
        raise r.fail(f"{key!r} nests arrays more than {MAX_ARRAY_DEPTH} deep")
    elem = r.unpack("<I")
    count = r.unpack("<Q")
    if elem not in _TYPES:
        raise r.fail(f"{key!r} is an array of unknown type {elem}")
    if count > MAX_ARRAY_LEN:
        raise r.fail(f"{key!r} is an array of {count} values, more than {MAX_ARRAY_LEN}")
    elem_name, elem_fmt = _TYPES[elem]
    if count <= KEEP_ARRAY_LEN:
        return [_value(r, elem, key, depth + 1) for _ in range(count)]
    digest = hashlib.sha256()
    if elem_fmt is not None:  # fixed-size numbers: hash them in chunks without decoding each
        size = struct.calcsize(elem_fmt)
        left = count * size
        while left:
            chunk = r.read(min(left, 1 << 20))
            digest.update(chunk)
            left -= len(chunk)
    else:
        for _ in range(count):
            item = _value(r, elem, key, depth + 1)
            digest.update(repr(item).encode("utf-8", "surrogatepass") + b"\0")
    return GGUFArray(elem_name, count, digest.hexdigest())


def parse_gguf_header(fh: BinaryIO, name: str, *, limit: int = MAX_GGUF_HEADER_BYTES,
                      file_bytes: Optional[int] = None) -> GGUFHeader:
    """Parse the header from a stream positioned at the file's first byte."""
    r = _Reader(fh, name, limit)
    magic = r.fh.read(4)
    r.pos = len(magic or b"")
    if magic != GGUF_MAGIC:
        raise WeightsError(f"{name}: not a GGUF file (it does not start with 'GGUF')")
    version = r.unpack("<I")
    if version == 1:
        raise WeightsError(f"{name}: GGUF version 1 is no longer read by llama.cpp; convert the model again")
    if version not in (2, 3):
        swapped = struct.unpack(">I", struct.pack("<I", version))[0]
        why = "a big-endian GGUF; llama.cpp on this machine reads little-endian ones" if swapped in (2, 3) \
            else f"unknown GGUF version {version}"
        raise WeightsError(f"{name}: {why}")
    n_tensors = r.unpack("<Q")
    n_kv = r.unpack("<Q")
    if n_tensors > MAX_TENSORS:
        raise r.fail(f"{n_tensors} tensors, more than {MAX_TENSORS}")
    if n_kv > MAX_KV:
        raise r.fail(f"{n_kv} metadata keys, more than {MAX_KV}")
    header = GGUFHeader(name=name, version=version, file_bytes=file_bytes)
    for _ in range(n_kv):
        key = r.string(MAX_KEY_BYTES, "a metadata key")
        if key in header.kv:
            raise r.fail(f"duplicate key {key[:80]!r}")
        code = r.unpack("<I")
        header.kv[key] = _value(r, code, key[:80], 0)
        header.kv_types[key] = _TYPES.get(code, ("?", None))[0]
    for _ in range(n_tensors):
        tname = r.string(MAX_KEY_BYTES, "a tensor name")
        n_dims = r.unpack("<I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise r.fail(f"tensor {tname[:80]!r} has {n_dims} dimensions (1 to {MAX_DIMS})")
        dims = tuple(r.unpack("<Q") for _ in range(n_dims))
        if any(d > MAX_DIM for d in dims):
            raise r.fail(f"tensor {tname[:80]!r} has a dimension over {MAX_DIM}: {list(dims)}")
        ttype = r.unpack("<I")
        r.unpack("<Q")  # data offset: the data is never read
        if tname in header.tensors:
            raise r.fail(f"duplicate tensor {tname[:80]!r}")
        header.tensors[tname] = (GGML_TYPES.get(ttype, f"type {ttype}"), dims)
    header.header_bytes = r.pos
    return header


def read_gguf_header(path: Union[str, "os.PathLike[str]"], name: Optional[str] = None, *,
                     limit: int = MAX_GGUF_HEADER_BYTES) -> GGUFHeader:
    """The header of a local GGUF file: a regular file only (FIFOs and devices are refused before a
    byte is read), at most `limit` header bytes, through a buffered reader (no memory map)."""
    name = name or Path(path).name
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise WeightsError(f"{name}: cannot read ({exc.strerror or exc})") from None
    except ValueError:
        raise WeightsError(f"{name}: cannot read (the path holds a NUL byte)") from None
    try:
        with os.fdopen(fd, "rb", buffering=1 << 16) as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise WeightsError(f"{name}: is {file_kind(info.st_mode)}, not a regular file")
            return parse_gguf_header(fh, name, limit=limit, file_bytes=info.st_size)
    except OSError as exc:
        raise WeightsError(f"{name}: cannot read ({exc.strerror or exc})") from None


def is_gguf_file(path: Path) -> bool:
    """A regular file whose name ends in .gguf (stat only, never opened)."""
    try:
        return path.name.lower().endswith(".gguf") and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
