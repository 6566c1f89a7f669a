"""Machine-readable output formats. Each format is its own module with `emit(report, rules) -> str`."""

from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["FORMATS", "get_emitter"]

# format name -> module under dflash_compat.emitters ("text" is rendered by dflash_compat.console)
FORMATS = {"json": "json_report", "sarif": "sarif", "junit": "junit", "github": "github"}


def get_emitter(fmt: str) -> Callable:
    return importlib.import_module(f"{__name__}.{FORMATS[fmt]}").emit
