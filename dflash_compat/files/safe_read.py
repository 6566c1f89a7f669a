"""Bounded reads of files the user names or a model folder holds: regular files only, a size cap, JSON
with a nesting and integer-size cap. Every failure is one line in the caller's exception class.

A model folder and every file named on the command line are untrusted input: `config.json` may be a
FIFO (opening it blocks until a writer appears), `/dev/zero` (reading never ends), a 10 GB file, or
JSON nested a million levels deep (RecursionError in json, pydantic, transformers). Nothing here
imports more than the standard library.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Union

from dflash_compat.exceptions import DFlashCompatError, InputError

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_INT_DIGITS",
    "read_bytes",
    "read_text",
    "parse_json",
    "load_json_file",
    "decode_float_tags",
    "FLOAT_TAG_KEY",
    "file_kind",
    "is_regular_file",
    "check_tokenizer_files",
    "TOKENIZER_JSON_FILES",
]

# Real config files are a few KB (tokenizer configs with chat templates a few MB).
MAX_CONFIG_BYTES = 64 * 1024 * 1024
# Real configs nest 4-5 levels (a VLM's text_config.rope_scaling); far below every recursive
# consumer's limit (json, pydantic's serializer, copy.deepcopy in transformers).
MAX_JSON_DEPTH = 64
# A config integer is a size, an id or a seed: 64 bits (20 digits with a sign), or one of transformers'
# "no limit" sentinels that real tokenizer configs hold as model_max_length: int(1e20) (21 digits) and
# int(1e30) (31 digits; transformers 5.24.0 transformers/tokenization_utils_base.py:145-146). Integers
# of hundreds of digits overflow float() and C ints downstream (OverflowError in torch, mlx and our
# own arithmetic); sizes between 64 bits and this cap are refused by the specs' own bounds.
MAX_INT_DIGITS = 32

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))

PathLike = Union[str, "os.PathLike[str]"]


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", "a folder", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _fail(error: type[DFlashCompatError], what: str, why: str) -> DFlashCompatError:
    return error(f"{what}: {why}")


def read_bytes(path: PathLike, limit: int, *, what: str = "", error: type[DFlashCompatError] = InputError) -> bytes:
    """The contents of a regular file of at most `limit` bytes, else `error` in one line.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; fstat then
    refuses anything but a regular file before a byte is read, and the read stops at `limit` + 1
    bytes even if the file grows meanwhile."""
    what = what or str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _fail(error, what, f"cannot read ({exc.strerror or exc})") from None
    except ValueError:  # a NUL byte in the path
        raise _fail(error, what, "cannot read (the path holds a NUL byte)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(error, what, f"is {file_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise _fail(error, what, f"{info.st_size} bytes is more than the {limit} this file may hold")
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # closed with fh
            data = fh.read(limit + 1)
    except OSError as exc:
        raise _fail(error, what, f"cannot read ({exc.strerror or exc})") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise _fail(error, what, f"more than the {limit} bytes this file may hold")
    return data


def read_text(path: PathLike, limit: int, *, what: str = "", error: type[DFlashCompatError] = InputError) -> str:
    """read_bytes decoded as UTF-8 (a byte-order mark is dropped)."""
    what = what or str(path)
    data = read_bytes(path, limit, what=what, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _fail(error, what, "not UTF-8 text") from None


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def _too_deep(value: Any, limit: int) -> bool:
    """Whether lists/objects nest more than `limit` levels; iterative, linear in the number of values."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def parse_json(text: str, *, what: str = "JSON", error: type[DFlashCompatError] = InputError,
               max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads with every way hostile JSON fails turned into `error` in one line: a syntax error,
    nesting deeper than `max_depth` (json itself raises RecursionError near 1,000 levels; pydantic
    and transformers fail far earlier), and integers wider than 64 bits."""
    try:
        value = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise _fail(error, what, f"invalid JSON (nested more than {max_depth} levels deep)") from None
    except json.JSONDecodeError as exc:
        raise _fail(error, what, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # from _parse_int
        raise _fail(error, what, f"invalid JSON ({exc})") from None
    if isinstance(value, (dict, list)) and _too_deep(value, max_depth):
        raise _fail(error, what, f"invalid JSON (nested more than {max_depth} levels deep)")
    return value


def load_json_file(path: PathLike, *, what: str = "", error: type[DFlashCompatError] = InputError,
                   limit: int = MAX_CONFIG_BYTES) -> Any:
    """A JSON file read with read_text's bounds and parsed with parse_json's."""
    what = what or str(path)
    return parse_json(read_text(path, limit, what=what, error=error), what=what, error=error)


# transformers writes a non-finite float in a config as {"__float__": "Infinity"} (JSON has no such
# literal) and decodes the tag when it reads the config back: transformers configuration_utils.py:62-63 (the
# tag and its values, both releases), _decode_special_floats at 5.24.0 :1166-1184 / 5.25.0 :1172-1190; mlx-lm
# 0.32.2 reads the same tag (mlx_lm/utils.py:340-347, load_config :363-365).
FLOAT_TAG_KEY = "__float__"
_FLOAT_TAGS = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def decode_float_tags(value: Any) -> Any:
    """`value` with every {"__float__": "Infinity" | "-Infinity" | "NaN"} object replaced by its float,
    as transformers decodes a config: an object holding exactly that one key with one of those three
    strings; any other object (an unknown tag, a tag beside other keys, a non-string) stays as it
    is. Iterative; returns new containers, never changes `value`."""
    def tag(node: Any) -> Any:
        if isinstance(node, dict) and len(node) == 1 and isinstance(node.get(FLOAT_TAG_KEY), str):
            return _FLOAT_TAGS.get(node[FLOAT_TAG_KEY], node)
        return node

    root = tag(value)
    if not isinstance(root, (dict, list)):
        return root
    out = type(root)() if isinstance(root, dict) else []
    stack: list[tuple[Any, Any]] = [(root, out)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, child in items:
            child = tag(child)
            if isinstance(child, (dict, list)) and child is not src:
                new: Any = {} if isinstance(child, dict) else []
                stack.append((child, new))
                child = new
            if isinstance(dst, dict):
                dst[key] = child
            else:
                dst.append(child)
    return out


def is_regular_file(path: PathLike) -> bool:
    """stat (never open) says a regular file: FIFOs, sockets, devices and folders are not."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False



# The JSON files a Hugging Face tokenizer folder may hold, and the JSON type each must be. transformers
# and tokenizers read them with json.load / serde and fail on a wrong type with AttributeError or
# KeyError, on deep nesting with RecursionError: every one is read here first, with the bounds above.
TOKENIZER_JSON_FILES = {
    "tokenizer.json": dict,
    "tokenizer_config.json": dict,
    "special_tokens_map.json": dict,
    "added_tokens.json": dict,
    "vocab.json": dict,
}


def check_tokenizer_files(folder: PathLike, what: str, error: type[DFlashCompatError] = InputError) -> None:
    """Read each tokenizer JSON file in `folder` through load_json_file (regular file, size, depth,
    integer width) and check its top-level type (an object; tokenizer.json's `model` an object too),
    so that transformers never parses a file that would crash it. Raises `error` naming the file."""
    from pathlib import Path

    base = Path(folder)
    for name, kind in TOKENIZER_JSON_FILES.items():
        path = base / name
        if not os.path.lexists(path):
            continue
        label = f"{what}: {name}"
        value = load_json_file(path, what=label, error=error)
        if not isinstance(value, kind):
            raise _fail(error, label, f"expected a JSON object, got {_json_type(value)}")
        if name == "tokenizer.json" and not isinstance(value.get("model"), dict):
            raise _fail(error, label, f"`model` should be a JSON object (got {_json_type(value.get('model'))})")


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
