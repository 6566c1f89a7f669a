"""`--format json`: the Report object, keys in schema order, findings already sorted."""

from __future__ import annotations

import json

from ..report import Report

__all__ = ["render"]


def render(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
