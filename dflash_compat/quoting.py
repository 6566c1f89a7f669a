"""How a message quotes a value from a config: like repr(), but never more than a few items or characters.

A config is untrusted input: a list of 50,000 layer ids or a 1 MB string copied into every finding
makes a report of gigabytes and a text render of minutes. Every message that quotes a config value
goes through `quote` (or `quote_items` for a list it prints without brackets); short values read
exactly as repr() would print them.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Optional

__all__ = ["MAX_ITEMS", "MAX_CHARS", "quote", "quote_items"]

MAX_ITEMS = 8  # list items / dict entries shown before "... (N more)"
MAX_CHARS = 120  # characters of a string shown before "... (N more characters)"
_MAX_DEPTH = 3  # nesting shown before [...]


def _quote_int(value: int) -> str:
    # str() of an int is quadratic in its digits and refuses more than 4,300 of them
    bits = value.bit_length()
    return str(value) if bits <= 128 else f"{'-' if value < 0 else ''}<an integer of about {bits * 3 // 10 + 1} digits>"


def _quote_str(value: str, chars: int) -> str:
    if len(value) <= chars:
        return repr(value)
    return f"{value[:chars]!r}... ({len(value) - chars} more characters)"


def _container(value: Any, items: int, chars: int, depth: int) -> str:
    if isinstance(value, (set, frozenset)) and not value:
        return f"{type(value).__name__}()"
    if isinstance(value, dict):
        opening, closing = "{", "}"
    elif isinstance(value, list):
        opening, closing = "[", "]"
    elif isinstance(value, tuple):
        opening, closing = "(", ")"
    else:
        opening, closing = "{", "}"
    if depth >= _MAX_DEPTH and value:
        return f"{opening}...{closing}"
    if isinstance(value, dict):
        shown = [f"{_quote(k, items, chars, depth + 1)}: {_quote(v, items, chars, depth + 1)}"
                 for k, v in islice(value.items(), items)]
    else:
        ordered = value if isinstance(value, (list, tuple)) else _sorted_or_not(value)
        shown = [_quote(v, items, chars, depth + 1) for v in islice(ordered, items)]
    more = len(value) - len(shown)
    tail = f", ... ({more} more)" if more > 0 else ("," if isinstance(value, tuple) and len(value) == 1 else "")
    return opening + ", ".join(shown) + tail + closing


def _sorted_or_not(value: Iterable[Any]) -> Iterable[Any]:
    try:
        return sorted(value) if len(value) <= 10_000 else value  # type: ignore[arg-type]
    except TypeError:
        return value


def _quote(value: Any, items: int, chars: int, depth: int) -> str:
    if isinstance(value, str):
        return _quote_str(value, chars)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return _quote_int(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return _container(value, items, chars, depth)
    text = repr(value)
    return text if len(text) <= chars else f"{text[:chars]}... ({len(text) - chars} more characters)"


def quote(value: Any, *, items: int = MAX_ITEMS, chars: int = MAX_CHARS) -> str:
    """repr(value), abbreviated: lists, tuples, sets and dicts show their first `items` entries then
    `... (N more)`, strings their first `chars` characters, nesting three levels, huge ints their size."""
    return _quote(value, items, chars, 0)


def quote_items(values: Iterable[Any], *, items: int = MAX_ITEMS, sep: str = ", ", raw: bool = False,
                total: Optional[int] = None) -> str:
    """The first `items` of `values` joined by `sep` (no brackets), then `... (N more)`: each quoted like
    quote, or with `raw` shown as it is (text we composed, e.g. `repr`s or `key=value` pairs), cut at
    MAX_CHARS. `total`: how many values there are in all, when the caller passes only the first few
    (so as not to compose text for 50,000 of them). For "layer ids 36, 37, ... (12 more)"."""
    values = values if isinstance(values, (list, tuple)) else list(values)
    if raw:
        shown = sep.join(_cut(str(v)) for v in values[:items])
    else:
        shown = sep.join(quote(v) for v in values[:items])
    more = (len(values) if total is None else total) - min(items, len(values))
    return shown + (f"{sep}... ({more} more)" if more > 0 else "")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else f"{text[:MAX_CHARS]}..."
