"""The output formats. Each is its own module with `render(report) -> str`; they render a `Report`
and nothing else (no rule registry, no recounting)."""

from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["FORMATS", "get_renderer", "counts"]

# format name -> module under dflash_compat.emitters
FORMATS = {"text": "text", "json": "json_report", "sarif": "sarif", "junit": "junit", "github": "github"}


def get_renderer(fmt: str) -> Callable[..., str]:
    """The `render(report) -> str` of a format (`text` also takes width= and color=)."""
    return importlib.import_module(f"{__name__}.{FORMATS[fmt]}").render



def counts(errors: int, warnings: int, infos: int) -> str:
    """`4 errors, 2 warnings, 1 info`: the summary phrase of the plain-text outputs (text, github, serve)."""
    return ", ".join(f"{n} {word}{'' if n == 1 else 's'}"
                     for n, word in ((errors, "error"), (warnings, "warning"), (infos, "info")))
