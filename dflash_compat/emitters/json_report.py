"""`--format json`: the Report object, keys in schema order, findings already sorted. Strict JSON:
a non-finite number from a config is null, a lone surrogate U+FFFD."""

from __future__ import annotations

from dflash_compat.checker.report import Report
from dflash_compat.emitters._safe import dumps

__all__ = ["render"]


def render(report: Report) -> str:
    return dumps(report.to_dict())
