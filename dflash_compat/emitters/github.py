"""`--format github`: GitHub Actions workflow commands (annotations on the config files).

Every line is one command whose values are escaped as GitHub unescapes them (`_safe.github_data`):
a value from a config cannot end its command or start another one.
"""

from __future__ import annotations

from dflash_compat.checker.report import Report
from dflash_compat.emitters import counts
from dflash_compat.emitters._paths import artifact_path
from dflash_compat.emitters._safe import github_data, github_property, printable

__all__ = ["render"]

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def render(report: Report) -> str:
    lines = []
    for f in report.findings:
        props = [f"title={github_property(f'{f.code} {f.name} ({f.backend})')}"]
        path = next((p for p in (artifact_path(report, loc) for loc in f.locations) if p), None)
        if path:
            props.insert(0, f"file={github_property(path)}")
        keys = ", ".join(f"{loc.artifact}:{loc.key}" for loc in f.locations)
        body = f"{f.message}" + (f" [{keys}]" if keys else "") + f" Fix: {f.fix}"
        lines.append(f"::{_LEVEL[f.severity]} {','.join(props)}::{github_data(body)}")
    s = report.summary
    verdict = ", ".join(f"{b}={v}" for b, v in s.verdict.items())
    strict = "; --strict: warnings fail" if report.strict else ""
    # plain log text, not a command: it starts with our name, so only control bytes need escaping
    summary = f"dflash-check: {counts(s.errors, s.warnings, s.infos)} ({verdict}){strict}"
    lines.append(printable(summary))
    return "\n".join(lines) + "\n"
