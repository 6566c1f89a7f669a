"""Checks for values where they enter the program: one InputError line (or one click usage line) that
names the option or the file, line and field, exit 2; nothing downstream meets a value it cannot take.

- Seeds: torch 2.13's `manual_seed` (and `torch.Generator().manual_seed`) takes -2**63 .. 2**64-1 and
  raises `ValueError: Overflow when unpacking long long` outside it (measured here, torch 2.13.0+cpu);
  a negative seed is used as its 64-bit two's complement (manual_seed(-1) == manual_seed(2**64-1)).
  A `--seed` outside that range is refused; a seed we derive (train's seed per step) is folded into
  it with `fold_seed` (x mod 2**64, which is what torch does to the negative seeds it accepts).
- Floats: `nan`, `inf` and `1e309` pass click's FloatRange (every comparison with NaN is false);
  FiniteFloatRange refuses them.
- Texts: a lone surrogate (from undecodable bytes on the command line, or `\\ud800` in JSON) cannot
  be encoded; tokenizers raise TypeError deep inside. `check_text` names its position.
- Integer lists: ASCII digits only (Python's int() reads Arabic-Indic or full-width digits).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Optional

import click

from dflash_compat.exceptions import InputError

__all__ = ["SEED_MIN", "SEED_MAX", "SeedRange", "FiniteFloatRange", "fold_seed", "check_seed", "check_text",
           "check_texts", "parse_int_list", "surrogate_position", "check_name"]

SEED_MIN = -(2**63)
SEED_MAX = 2**64 - 1
_SEED_SPAN = 2**64


def fold_seed(value: int) -> int:
    """A derived seed folded into the range torch accepts: value mod 2**64 (torch itself treats a
    negative seed as its two's complement, so for the seeds torch takes this changes nothing)."""
    return value % _SEED_SPAN


def check_seed(value: int, what: str = "--seed") -> int:
    if not SEED_MIN <= value <= SEED_MAX:
        raise InputError(f"{what}: {_short_int(value)} is outside the seeds torch accepts "
                         f"({SEED_MIN} to {SEED_MAX})")
    return value


def _short_int(value: int) -> str:
    return str(value) if value.bit_length() <= 256 else f"an integer of about {value.bit_length() * 3 // 10} digits"


class SeedRange(click.IntRange):
    """An integer seed torch accepts (-2**63 .. 2**64-1), or a narrower range a runtime takes (smoke:
    0 .. 2**63-1, runtime/core.py MAX_SEED, which MLX's key takes too); a usage error names the option."""

    name = "seed"

    def __init__(self, low: int = SEED_MIN, high: int = SEED_MAX, label: str = "the seeds torch accepts") -> None:
        super().__init__(low, high)
        self.label = label

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        if isinstance(value, str) and not re.fullmatch(r"\s*[+-]?[0-9]{1,40}\s*", value):
            self.fail(f"{_shown(value)} is not an integer of ASCII digits", param, ctx)
        rv = value if isinstance(value, int) else click.INT.convert(value, param, ctx)
        if not self.min <= rv <= self.max:
            span = f"{_power(self.min)} to {_power(self.max)}"
            self.fail(f"{_short_int(rv)} is outside {self.label} ({span})", param, ctx)
        return rv


def _power(value: int) -> str:
    names = {SEED_MIN: "-2**63", SEED_MAX: "2**64-1", 2**63 - 1: "2**63-1", 0: "0"}
    return names.get(value, str(value))


def _shown(text: str) -> str:
    return ascii(text if len(text) <= 24 else text[:24] + "...")


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that refuses NaN and the infinities (`nan`, `inf`, `1e309`): every comparison
    with NaN is false, so FloatRange alone lets it through."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(rv, param, ctx)


def surrogate_position(text: str) -> Optional[int]:
    """The index of the first lone surrogate in `text` (None when it encodes as UTF-8)."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as exc:
        return exc.start


def check_text(text: str, what: str) -> str:
    """`text` unchanged when it is valid Unicode (encodable as UTF-8), else InputError naming `what`
    and the character (line and column) of the first lone surrogate. Surrogates U+DC80-U+DCFF are the
    bytes Python could not decode from the command line or a file name (surrogateescape)."""
    if not isinstance(text, str):
        raise InputError(f"{what}: expected text, got {type(text).__name__}")
    at = surrogate_position(text)
    if at is None:
        return text
    code = ord(text[at])
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    where = f"character {at + 1}" + (f" (line {line} column {column})" if line > 1 else "")
    if 0xDC80 <= code <= 0xDCFF:
        why = f"the byte 0x{code - 0xDC00:02x} at {where} is not UTF-8"
    else:
        why = f"a lone surrogate U+{code:04X} at {where}"
    raise InputError(f"{what}: not valid Unicode text: {why}")


def check_texts(texts: Iterable[str], what: str) -> list[str]:
    """check_text for each; `what` names the source, `#N` the item (1-based)."""
    out = list(texts)
    for n, text in enumerate(out, 1):
        check_text(text, f"{what} #{n}" if len(out) > 1 else what)
    return out


_DIGITS = re.compile(r"[0-9]+")


def parse_int_list(text: str, what: str, *, allow_negative: bool = False) -> list[int]:
    """`1,2,3` as integers: ASCII digits only (int() would read '١,٢' as [1, 2]), no empty items,
    each at most 20 digits."""
    check_text(text, what)
    items = [part.strip() for part in text.split(",")]
    out = []
    for item in items:
        body = item[1:] if allow_negative and item.startswith("-") else item
        if not _DIGITS.fullmatch(body) or len(body) > 20:
            raise InputError(f"{what}: expected comma-separated integers of ASCII digits like 1,2,3; "
                             f"got {_shown(item)}")
        out.append(int(item))
    return out


# C0/C1 controls, DEL, bidirectional embeddings/overrides/isolates/marks, line/paragraph separators,
# zero-width characters and the BOM: characters that change or hide what a printed command means.
_UNSAFE_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                          "\ud800-\udfff\ufffe\uffff]")


def check_name(value: str, what: str) -> str:
    """A name that goes into a printed command, a launch script or a report (a served model name, a
    path, a repo id): refused when it holds a control, bidirectional-override or invisible character
    (the "Trojan Source" trick, CVE-2021-42574), naming the first one and its position."""
    match = _UNSAFE_NAME.search(value)
    if match is None:
        return value
    code = ord(match.group())
    raise InputError(f"{what}: holds the invisible or control character U+{code:04X} at character "
                     f"{match.start() + 1}; a printed command would not show what it runs")
