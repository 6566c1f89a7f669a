"""`--format github`: GitHub Actions workflow commands (annotations on the config files)."""

from __future__ import annotations

from ..report import Report
from ._paths import artifact_path

__all__ = ["render"]

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for f in report.findings:
        props = [f"title={_escape_prop(f'{f.code} {f.name} ({f.backend})')}"]
        path = next((p for p in (artifact_path(report, loc) for loc in f.locations) if p), None)
        if path:
            props.insert(0, f"file={_escape_prop(path)}")
        keys = ", ".join(f"{loc.artifact}:{loc.key}" for loc in f.locations)
        body = f"{f.message}" + (f" [{keys}]" if keys else "") + f" Fix: {f.fix}"
        lines.append(f"::{_LEVEL[f.severity]} {','.join(props)}::{_escape_data(body)}")
    s = report.summary
    verdict = ", ".join(f"{b}={v}" for b, v in s.verdict.items())
    strict = "; --strict: warnings fail" if report.strict else ""
    lines.append(f"dflash-check: {s.errors} errors, {s.warnings} warnings, {s.infos} infos ({verdict}){strict}")
    return "\n".join(lines) + "\n"
