"""`--format json`: the Report object, keys in schema order, findings already sorted."""

from __future__ import annotations

import json
from typing import Sequence

from ..report import Report

__all__ = ["emit"]


def emit(report: Report, rules: Sequence = ()) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
