"""Terminal output policy for every command: whether to colour and how wide to wrap, a rich Console
that follows both, and text wrapping at words. The CLI's renderers (`dflash_compat.cli.console`) and
the text emitters build on it.

Colour only on a terminal: never in a pipe or a CI log unless FORCE_COLOR asks; NO_COLOR and
TERM=dumb turn it off (NO_COLOR wins). The width is COLUMNS when set, else the terminal's, else 80.
Every layout fits 80 columns; below that, lines wrap at words and tables turn into lists.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from typing import IO, TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console
    from rich.text import Text

__all__ = ["color_enabled", "terminal_width", "make_console", "wrap", "wrap_block", "error_text", "print_paragraph"]

_MIN_WIDTH = 40


def color_enabled(stream: IO) -> bool:
    """ANSI styles for `stream`: NO_COLOR (set, non-empty) or TERM=dumb say no, FORCE_COLOR (set,
    non-empty, not 0) says yes, otherwise only when the stream is a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def _isatty(stream: IO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False


def terminal_width(stream: IO) -> int:
    """COLUMNS when it is a positive number, else the terminal's width, else 80 (pipes, CI logs)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), _MIN_WIDTH)
    if _isatty(stream):
        try:
            return max(os.get_terminal_size(stream.fileno()).columns, _MIN_WIDTH)
        except (OSError, ValueError):
            pass
    return 80


def make_console(stderr: bool = False, width: Optional[int] = None, no_color: bool = False) -> "Console":
    """A Console on stdout (or stderr) that follows `color_enabled` and `terminal_width`."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    color = color_enabled(stream) and not no_color
    return Console(file=stream, width=width or terminal_width(stream), force_terminal=True if color else None,
                   no_color=not color, color_system="standard" if color else None, highlight=False,
                   soft_wrap=False)


def wrap(text: str, width: int, indent: int = 0, first: Optional[int] = None) -> list[str]:
    """`text` in lines of at most `width` columns with a hanging `indent` (the first line starts at
    column `first`, default `indent`; indents are included). Words are never split: a config key
    or a path longer than a line stays whole and overflows it."""
    first = indent if first is None else first
    wrapper = textwrap.TextWrapper(width=max(width, indent + 10), initial_indent=" " * first,
                                   subsequent_indent=" " * indent, break_long_words=False,
                                   break_on_hyphens=False)
    if _GLUE not in text:  # a short `code span` stays on one line: its spaces are glued while wrapping
        text = _CODE_SPAN.sub(lambda m: m.group().replace(" ", _GLUE), text)
    return [line.replace(_GLUE, " ") for line in wrapper.wrap(text)] or [" " * first]


def wrap_block(lines: Sequence[str], stream: IO, indent: int = 4) -> str:
    """Message lines for `stream`, each wrapped at its width (`terminal_width`) with a hanging `indent`,
    words (paths, config keys) never split."""
    width = terminal_width(stream)
    return "\n".join(part for line in lines for part in wrap(line, width, indent=indent, first=0))


def error_text(line: str, stream: IO) -> str:
    """A one-line error as printed: wrapped at the terminal's width with a hanging indent when `stream`
    is a terminal, else left whole (one line a CI log or a script can grep)."""
    if not _isatty(stream):
        return line
    return "\n".join(wrap(line, terminal_width(stream), indent=4, first=0))


_GLUE = "\x1f"  # not whitespace to textwrap, and never in printed text (`_safe.printable` escapes it)
_CODE_SPAN = re.compile(r"`[^`\n]{1,40}`")


def _print(console: "Console", line: "Text | str") -> None:
    console.print(line, soft_wrap=True, crop=False, markup=False)  # lines come wrapped already


def print_paragraph(console: "Console", text: str, indent: int = 2, style: str = "", head: str = "",
                    head_style: str = "bold") -> None:
    """`head` (styled) then `text`, wrapped to the console's width at words with a hanging `indent`.
    Both are printed as plain text (never markup); escape what came from outside before (`_safe.printable`)."""
    from rich.text import Text

    lines = wrap(f"{head}{text}", console.width, indent=indent, first=0)
    for i, line in enumerate(lines):
        out = Text(line, style=style)
        if i == 0 and head:
            out.stylize(head_style, 0, len(head))
        _print(console, out)
