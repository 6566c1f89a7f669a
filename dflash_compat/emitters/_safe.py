"""What each output format cannot carry from a hostile config, escaped or dropped.

Strings in a report come from the user's files (model types, keys, values, paths). A terminal must
not receive their control bytes (ESC sequences recolour, retitle or hide text; BEL rings), XML 1.0
forbids most C0 characters, a lone surrogate cannot be encoded as UTF-8, strict JSON has no
Infinity or NaN, and a GitHub workflow command ends at a newline. Each format calls the helper for
what it cannot carry; the data itself is never changed.
"""

from __future__ import annotations

import math
import re
from functools import cache
from json.encoder import encode_basestring  # json.dumps' string writer when ensure_ascii=False
from typing import Any

__all__ = ["dumps", "github_data", "github_property", "json_safe", "printable", "shell_quote"]

# C0 controls, DEL and C1 controls; bidirectional overrides and isolates (they reorder what a reader
# sees); Unicode line and paragraph separators; the byte-order mark; lone surrogates; U+FFFE/U+FFFF.
_OTHER = r"\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff\ufffe\uffff"
_UNSAFE = rf"[\x00-\x1f{_OTHER}]"
_UNSAFE_BUT_NEWLINE = rf"[\x00-\x09\x0b-\x1f{_OTHER}]"
_SURROGATE = r"[\ud800-\udfff]"


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """One of the patterns above, compiled on first use: their wide classes take ~2 ms to compile, and a
    JSON report of an ASCII config needs none of them (start-up)."""
    return re.compile(pattern)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: Any, keep_newlines: bool = False) -> str:
    """`str(value)` with every control or reordering character shown as a visible escape (`\\x1b`),
    so that it reaches a terminal, a log or an XML document as text. `keep_newlines` keeps `\\n`
    (multi-line texts we wrote ourselves)."""
    text = value if isinstance(value, str) else str(value)
    return _compiled(_UNSAFE_BUT_NEWLINE if keep_newlines else _UNSAFE).sub(_escape, text)


def json_safe(value: Any) -> Any:
    """A copy that strict JSON can carry and UTF-8 can encode: lone surrogates become U+FFFD and
    non-finite floats null. Control characters stay: JSON escapes them (`\\u001b`)."""
    if isinstance(value, str):  # an ASCII string has no surrogate: no regex pass (most of a report)
        return value if value.isascii() else _compiled(_SURROGATE).sub("\ufffd", value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Strict JSON text (no Infinity or NaN), indented, ending in a newline: byte for byte
    `json.dumps(json_safe(value), indent=2, ensure_ascii=False, allow_nan=False) + "\\n"`, written in
    one pass. The json module indents with its pure-Python, generator-based encoder (its C encoder
    cannot indent), which with `json_safe`'s copy was half of a config-only check's run time."""
    out: list[str] = []
    _encode(value, out, "\n")
    out.append("\n")
    return "".join(out)


def _safe_str(text: str) -> str:
    return text if text.isascii() else _compiled(_SURROGATE).sub("\ufffd", text)


def _encode(value: Any, out: list[str], newline: str) -> None:
    """Append `value` as json.dumps(indent=2) writes it at the depth of `newline` ("\\n" + its indent)."""
    if isinstance(value, str):
        out.append(encode_basestring(_safe_str(value)))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(float.__repr__(value) if math.isfinite(value) else "null")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        if all(type(k) is str and k.isascii() for k in value):
            items = value.items()
        else:  # as json_safe: keys as strings, made safe (two that become one keep the last value)
            items = {_safe_str(str(k)): v for k, v in value.items()}.items()
        inner = newline + "  "
        sep = "{" + inner
        for k, v in items:
            out.append(sep)
            out.append(encode_basestring(k))
            out.append(": ")
            _encode(v, out, inner)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for v in value:
            out.append(sep)
            _encode(v, out, inner)
            sep = "," + inner
        out.append(newline + "]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def github_data(value: Any) -> str:
    """The message of a GitHub workflow command: one line, with `%`, CR and LF escaped as GitHub
    unescapes them, so that no value can end the command and start another one."""
    return printable(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(value: Any) -> str:
    """A property value (`file=`, `title=`): as `github_data`, and `:` and `,` escaped too."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")


def shell_quote(word: Any) -> str:
    """One shell word for a printed command: shlex.quote when the word holds only characters a reader
    sees as they are; otherwise bash's ANSI-C quoting ($'...') with every control, bidirectional-override,
    invisible or unencodable character written as an escape (\\n, \\x1b, \\u202e), so the printed
    text shows what runs ("Trojan Source", CVE-2021-42574) and the shell still gets the same bytes."""
    import shlex

    text = word if isinstance(word, str) else str(word)
    if not _compiled(_UNSAFE).search(text):
        return shlex.quote(text)
    out = []
    for ch in text:
        code = ord(ch)
        if ch in ("\\", "'"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif _compiled(_UNSAFE).match(ch):
            if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte from a file name (surrogateescape)
                out.append(f"\\x{code - 0xDC00:02x}")
            else:
                out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"
