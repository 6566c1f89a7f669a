"""The output formats. Each is its own module with `render(report) -> str`; they render a `Report`
and nothing else (no rule registry, no recounting)."""

from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["FORMATS", "get_renderer", "counts", "looks_like_report"]

# format name -> module under dflash_compat.emitters
FORMATS = {"text": "text", "json": "json_report", "sarif": "sarif", "junit": "junit", "github": "github",
           "markdown": "markdown"}


def get_renderer(fmt: str) -> Callable[..., str]:
    """The `render(report) -> str` of a format (`text` also takes width= and color=)."""
    return importlib.import_module(f"{__name__}.{FORMATS[fmt]}").render


def counts(errors: int, warnings: int, infos: int) -> str:
    """`4 errors, 2 warnings, 1 info`: the summary phrase of the plain-text outputs (text, github, serve)."""
    return ", ".join(f"{n} {word}{'' if n == 1 else 's'}"
                     for n, word in ((errors, "error"), (warnings, "warning"), (infos, "info")))


def looks_like_report(head: bytes) -> bool:
    """Whether a file's first bytes are a report some format here wrote (so `check -o` may replace it
    without --force): JSON/SARIF naming the tool, JUnit's testsuites element, GitHub annotation lines
    ending in our summary line, the Markdown report's heading, or the text report's target/draft
    header. A file this does not recognise is left alone unless the user passes --force."""
    text = head.decode("utf-8", errors="replace")
    start = text.lstrip()
    if start.startswith("{"):
        return '"dflash-check"' in text
    if start.startswith("<?xml"):
        return '<testsuites name="dflash-check"' in text
    lines = text.splitlines()
    if lines and all(ln.startswith("::") for ln in lines[:-1]) and lines[-1].startswith("dflash-check: "):
        return True
    if text.startswith("### ") and "dflash-check: the draft" in lines[0]:  # markdown
        return True
    return text.startswith("target ") and "\ndraft  " in text[:4096]
