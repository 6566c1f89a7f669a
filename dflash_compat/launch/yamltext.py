"""YAML nodes as launch files use them: a scalar's value with the file position of each of its characters,
mappings read through merge keys (`<<: *anchor`), and compose's own variable interpolation.

PyYAML's composer gives a node's value and the marks where it starts and ends, not where each character of
the value came from. A command written over several lines (a plain scalar folded into one line, a block
scalar `|` / `>`, a quoted string with escapes) needs that, so that a finding names the line and column
the user wrote. `scalar_text` reads the scalar again from the file's own text, style by style as PyYAML's
scanner does (yaml/scanner.py: scan_plain, scan_flow_scalar, scan_block_scalar), keeping each character's
offset, and uses the result only when it is exactly the value PyYAML read; otherwise every character is
placed at the scalar's start (never a wrong line: at worst the scalar's first one).
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Optional

from dflash_compat.launch.shellwords import Lines, PosFn

__all__ = ["scalar_text", "get", "items", "scalar", "interpolate", "MERGE_TAG", "node_offset"]

MERGE_TAG = "tag:yaml.org,2002:merge"
_BREAKS = "\r\n\x85\u2028\u2029"
_ESCAPES = {"0": "\0", "a": "\x07", "b": "\x08", "t": "\x09", "\t": "\x09", "n": "\x0a", "v": "\x0b", "f": "\x0c",
            "r": "\x0d", "e": "\x1b", " ": "\x20", '"': '"', "\\": "\\", "/": "/", "N": "\x85", "_": "\xa0",
            "L": "\u2028", "P": "\u2029"}
_CODES = {"x": 2, "u": 4, "U": 8}


# ------------------------------------------------------------------------------------------ mappings


def items(node: Any, _seen: Optional[set] = None) -> list[tuple[str, Any]]:
    """A mapping's (key, value node) pairs with merge keys applied as YAML 1.1 merges them: the mapping's
    own keys first, then those of each merged mapping (earlier ones win), recursively; aliases are the
    anchored node itself, and a cycle of merges ends."""
    from yaml import MappingNode, SequenceNode

    if not isinstance(node, MappingNode):
        return []
    seen = _seen if _seen is not None else set()
    if id(node) in seen:
        return []
    seen.add(id(node))
    own: list[tuple[str, Any]] = []
    merged: list[tuple[str, Any]] = []
    for k, v in node.value:
        if getattr(k, "tag", None) == MERGE_TAG:
            sources = v.value if isinstance(v, SequenceNode) else [v]
            for src in sources:
                merged += items(src, seen)
        else:
            own.append((str(k.value) if not isinstance(k.value, list) else "", v))
    keys = {k for k, _ in own}
    for k, v in merged:
        if k not in keys:
            own.append((k, v))
            keys.add(k)
    return own


def get(node: Any, key: str) -> Any:
    for k, v in items(node):
        if k == key:
            return v
    return None


def scalar(node: Any) -> Optional[str]:
    from yaml import ScalarNode

    return node.value if isinstance(node, ScalarNode) else None


def node_offset(node: Any, lines: Lines) -> tuple[int, int]:
    return lines.pos(node.start_mark.index)


# ------------------------------------------------------------------------------------------- scalars


def scalar_text(node: Any, text: str, lines: Lines) -> tuple[str, PosFn]:
    """(the scalar's value, character i of the value -> (line, column) in the file)."""
    value = str(node.value)
    offsets = None
    try:
        offsets = _offsets(node, text)
    except IndexError:  # a scalar read differently than here: placed at its start below
        offsets = None
    if offsets is not None and offsets[0] == value:
        table = offsets[1]
        last = len(table) - 1

        def pos(i: int) -> tuple[int, int]:
            return lines.pos(table[i if 0 <= i <= last else last])
        return value, pos
    start = node.start_mark.index + (1 if node.style in ("'", '"') else 0)
    first = lines.pos(start)

    def at_start(i: int) -> tuple[int, int]:
        return first
    return value, at_start


def _offsets(node: Any, text: str) -> Optional[tuple[str, list[int]]]:
    a, b = node.start_mark.index, node.end_mark.index
    if node.style in ("'", '"'):
        return _flow(text, a, b, node.style == '"')
    if node.style in ("|", ">"):
        got = _block(text, a, None)
        if got is not None and got[0] == node.value:
            return got
        for indent in range(1, 64):  # an explicit indentation indicator: the parent's indent is not on the node
            got = _block(text, a, indent)
            if got is not None and got[0] == node.value:
                return got
        return None
    return _plain(text, a, b)


def _line_break(text: str, i: int) -> tuple[str, int]:
    """(the break as PyYAML reads it, the index after it) for a break at i."""
    ch = text[i]
    if ch == "\r" and text.startswith("\r\n", i):
        return "\n", i + 2
    if ch in "\r\n\x85":
        return "\n", i + 1
    return ch, i + 1


def _plain(text: str, a: int, b: int) -> tuple[str, list[int]]:
    out: list[str] = []
    offs: list[int] = []
    i = a
    while i < b:
        j = i
        while j < b and text[j] not in " \t" + _BREAKS:
            j += 1
        out.append(text[i:j])
        offs.extend(range(i, j))
        i = j
        if i >= b:
            break
        # spaces, then perhaps line breaks
        k = i
        while k < b and text[k] in " \t":
            k += 1
        if k < b and text[k] in _BREAKS:
            first_at = k
            brk, k = _line_break(text, k)
            breaks: list[tuple[str, int]] = []
            while k < b and text[k] in " \t" + _BREAKS:
                if text[k] in " \t":
                    k += 1
                else:
                    at = k
                    nb, k = _line_break(text, k)
                    breaks.append((nb, at))
            if brk != "\n":
                out.append(brk)
                offs.append(first_at)
            elif not breaks:
                out.append(" ")
                offs.append(first_at)
            for nb, at in breaks:
                out.append(nb)
                offs.append(at)
        else:
            out.append(text[i:k])
            offs.extend(range(i, k))
        i = k
    offs.append(b)
    return "".join(out), offs


def _flow(text: str, a: int, b: int, double: bool) -> tuple[str, list[int]]:
    """A quoted scalar from its opening quote at a to just past its closing quote at b."""
    out: list[str] = []
    offs: list[int] = []
    quote = text[a]
    i, end = a + 1, b - 1
    while i < end:
        ch = text[i]
        if ch in " \t":
            k = i
            while k < end and text[k] in " \t":
                k += 1
            if k < end and text[k] in _BREAKS:
                first_at = k
                brk, k = _line_break(text, k)
                breaks, k = _flow_breaks(text, k, end)
                if brk != "\n":
                    out.append(brk)
                    offs.append(first_at)
                elif not breaks:
                    out.append(" ")
                    offs.append(first_at)
                for nb, at in breaks:
                    out.append(nb)
                    offs.append(at)
            else:
                out.append(text[i:k])
                offs.extend(range(i, k))
            i = k
        elif ch in _BREAKS:
            first_at = i
            brk, k = _line_break(text, i)
            breaks, k = _flow_breaks(text, k, end)
            if brk != "\n":
                out.append(brk)
                offs.append(first_at)
            elif not breaks:
                out.append(" ")
                offs.append(first_at)
            for nb, at in breaks:
                out.append(nb)
                offs.append(at)
            i = k
        elif not double and ch == "'" and text[i + 1] == "'":
            out.append("'")
            offs.append(i)
            i += 2
        elif double and ch == "\\":
            e = text[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                offs.append(i)
                i += 2
            elif e in _CODES:
                n = _CODES[e]
                out.append(chr(int(text[i + 2:i + 2 + n], 16)))
                offs.append(i)
                i += 2 + n
            elif e in _BREAKS:
                _, k = _line_break(text, i + 1)
                breaks, k = _flow_breaks(text, k, end)
                for nb, at in breaks:
                    out.append(nb)
                    offs.append(at)
                i = k
            else:
                return "", []  # not a scalar PyYAML reads: the caller falls back
        else:
            out.append(ch)
            offs.append(i)
            i += 1
    if text[a] != quote:
        return "", []
    offs.append(b)
    return "".join(out), offs


def _flow_breaks(text: str, k: int, end: int) -> tuple[list[tuple[str, int]], int]:
    breaks = []
    while True:
        while k < end and text[k] in " \t":
            k += 1
        if k < end and text[k] in _BREAKS:
            at = k
            nb, k = _line_break(text, k)
            breaks.append((nb, at))
        else:
            return breaks, k


class _Cursor:
    """A position in the text with its column (PyYAML's `self.column`)."""

    def __init__(self, text: str, i: int) -> None:
        self.t, self.i = text, i
        line_start = max(text.rfind("\n", 0, i), text.rfind("\r", 0, i)) + 1
        self.col = i - line_start

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.t[j] if j < len(self.t) else "\0"

    def forward(self, n: int = 1) -> None:
        for _ in range(n):
            ch = self.t[self.i]
            self.i += 1
            if ch in "\n\x85\u2028\u2029" or ch == "\r" and self.peek() != "\n":
                self.col = 0
            elif ch != "\ufeff":
                self.col += 1

    def line_break(self) -> tuple[str, int]:
        at = self.i
        ch = self.peek()
        if ch in "\r\n\x85":
            self.forward(2 if self.t.startswith("\r\n", self.i) else 1)
            return "\n", at
        if ch in "\u2028\u2029":
            self.forward()
            return ch, at
        return "", at


def _block(text: str, a: int, indent_guess: Optional[int]) -> Optional[tuple[str, list[int]]]:
    """A block scalar whose indicator (`|` or `>`) is at a. `indent_guess`: the content indentation to try
    when the header gives an indentation indicator (it depends on the parent's indent)."""
    c = _Cursor(text, a)
    folded = c.peek() == ">"
    c.forward()
    chomping, increment = None, None
    ch = c.peek()
    if ch in "+-":
        chomping = ch == "+"
        c.forward()
        if c.peek().isdigit():
            increment = int(c.peek())
            c.forward()
    elif ch.isdigit():
        increment = int(ch)
        c.forward()
        if c.peek() in "+-":
            chomping = c.peek() == "+"
            c.forward()
    while c.peek() == " ":
        c.forward()
    if c.peek() == "#":
        while c.peek() not in "\0" + _BREAKS:
            c.forward()
    c.line_break()
    out: list[str] = []
    offs: list[int] = []
    if increment is None:
        breaks: list[tuple[str, int]] = []
        max_indent = 0
        while c.peek() in " " + _BREAKS:
            if c.peek() != " ":
                breaks.append(c.line_break())
            else:
                c.forward()
                max_indent = max(max_indent, c.col)
        indent = max(1, max_indent) if indent_guess is None else indent_guess
        if indent_guess is not None:
            return None  # guesses are for indentation indicators only
    else:
        if indent_guess is None:
            return None
        indent = indent_guess
        breaks = _block_breaks(c, indent)
    line_break: tuple[str, int] = ("", c.i)
    while c.col == indent and c.peek() != "\0":
        for brk in breaks:
            out.append(brk[0])
            offs.append(brk[1])
        leading_non_space = c.peek() not in " \t"
        start = c.i
        while c.peek() not in "\0" + _BREAKS:
            c.i += 1
        out.append(text[start:c.i])
        offs.extend(range(start, c.i))
        c.col += c.i - start
        line_break = c.line_break()
        breaks = _block_breaks(c, indent)
        if c.col == indent and c.peek() != "\0":
            if folded and line_break[0] == "\n" and leading_non_space and c.peek() not in " \t":
                if not breaks:
                    out.append(" ")
                    offs.append(line_break[1])
            else:
                out.append(line_break[0])
                offs.append(line_break[1])
        else:
            break
    if chomping is not False and line_break[0]:
        out.append(line_break[0])
        offs.append(line_break[1])
    if chomping is True:
        for brk in breaks:
            out.append(brk[0])
            offs.append(brk[1])
    offs.append(c.i)
    return "".join(out), offs


def _block_breaks(c: _Cursor, indent: int) -> list[tuple[str, int]]:
    breaks = []
    while c.col < indent and c.peek() == " ":
        c.forward()
    while c.peek() in _BREAKS and c.peek() != "\0":
        breaks.append(c.line_break())
        while c.col < indent and c.peek() == " ":
            c.forward()
    return breaks


# ---------------------------------------------------------------------------------- interpolation

_VAR = re.compile(r"\$(?:(\$)|\{|([A-Za-z_][A-Za-z0-9_]*))")


def interpolate(value: str, pos: PosFn) -> tuple[str, PosFn, list[tuple[int, int, str]]]:
    """Compose's interpolation of one value (compose-spec: interpolation): `$$` is a literal `$`; `${VAR:-d}`
    and `${VAR-d}` take the default (the value this file states); `$VAR`, `${VAR}`, `${VAR:?e}`, `${VAR:+a}`
    come from the environment of whoever runs compose, which the file does not give: kept as written and
    returned as unresolved spans (start, end, name) of the result. It applies inside quotes too: compose
    reads the value before any shell does."""
    out: list[str] = []
    src: list[int] = []  # index in `value` of each character of the result
    marks: list[tuple[int, int, str]] = []
    _interpolate(value, 0, len(value), out, src, marks, 0)
    text = "".join(out)
    last = len(value)

    def new_pos(i: int) -> tuple[int, int]:
        return pos(src[i] if 0 <= i < len(src) else last)
    return text, new_pos, marks


def _interpolate(value: str, i: int, end: int, out: list[str], src: list[int], marks: list, depth: int) -> None:
    while i < end:
        j = value.find("$", i, end)
        if j < 0:
            j = end
        out.append(value[i:j])
        src.extend(range(i, j))
        if j >= end:
            return
        if value.startswith("$$", j):
            out.append("$")
            src.append(j)
            i = j + 2
            continue
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(value, j + 1)
        if m and value[j + 1] != "{":
            start = len(src)
            out.append(value[j:m.end()])
            src.extend(range(j, m.end()))
            marks.append((start, len(src), m.group()))
            i = m.end()
            continue
        if value.startswith("${", j):
            close = _brace(value, j + 2, end)
            body_m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(value, j + 2)
            if close < 0 or body_m is None:
                out.append("$")
                src.append(j)
                i = j + 1
                continue
            name, op_at = body_m.group(), body_m.end()
            op = value[op_at:op_at + 2]
            if op in (":-",) or op[:1] == "-":
                d_start = op_at + (2 if op == ":-" else 1)
                if depth < 16:
                    _interpolate(value, d_start, close, out, src, marks, depth + 1)
            else:
                start = len(src)
                out.append(value[j:close + 1])
                src.extend(range(j, close + 1))
                marks.append((start, len(src), name))
            i = close + 1
            continue
        out.append("$")
        src.append(j)
        i = j + 1


def _brace(value: str, i: int, end: int) -> int:
    depth = 1
    while i < end:
        if value.startswith("${", i):
            depth += 1
            i += 2
            continue
        if value[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def walk(node: Any) -> Iterator[Any]:
    """Every node under `node` once (an alias is its anchor's node: visited once, so no alias bomb and no
    anchor cycle makes this run long), depth first, without recursion."""
    from yaml import MappingNode, SequenceNode

    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        if isinstance(n, MappingNode):
            for _k, v in reversed(n.value):
                stack.append(v)
        elif isinstance(n, SequenceNode):
            stack.extend(reversed(n.value))
