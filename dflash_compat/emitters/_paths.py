"""Where a location's file lives, for formats that want a path (SARIF, GitHub annotations)."""

from __future__ import annotations

import posixpath

from dflash_compat.checker.findings import Location
from dflash_compat.checker.report import Report

__all__ = ["artifact_path"]


def artifact_path(report: Report, loc: Location) -> str | None:
    """`<source>/<file>` for files, normalised (`./config.json` -> `config.json`, as code scanning and
    annotations name files relative to the checkout); None for the module tree (a logical location only)."""
    if loc.file.startswith("<"):
        return None
    source = (report.target if loc.artifact == "target" else report.draft).get("source") or loc.artifact
    return posixpath.normpath(f"{str(source).rstrip('/')}/{loc.file}")
