"""Running third-party code (transformers, mlx-lm, a repo's own model code) inside a check: what it prints
stays out of our output, and its sys.exit() becomes an exception the caller reports.

mlx-lm's model modules print an install hint and call `sys.exit(1)` when an optional package is
missing (olmo without `hf_olmo`): unguarded, the check would exit 1 (CI reads "incompatible") with
no report and a stray line on stdout where the report belongs.
"""

from __future__ import annotations

import contextlib
import io
from typing import Iterator

__all__ = ["ForeignExit", "contained"]


class ForeignExit(Exception):
    """Third-party code called sys.exit(); the message holds its exit code and the first line it printed."""


@contextlib.contextmanager
def contained(who: str) -> Iterator[io.StringIO]:
    """Run `who`'s code with its stdout captured (yielded, for a caller that wants it) and SystemExit
    turned into ForeignExit. KeyboardInterrupt passes through."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            yield printed
    except SystemExit as exc:
        said = next((ln.strip() for ln in printed.getvalue().splitlines() if ln.strip()), "")
        hint = f": {said[:200]}" if said else ""
        raise ForeignExit(f"{who} called sys.exit({exc.code!r}){hint}") from None
