"""`--format markdown`: a compact report for `$GITHUB_STEP_SUMMARY` and pull-request comments.

A heading with the overall verdict, a table of backends and counts, the errors and warnings (code,
backend, message, where, fix), then the infos, the rules that did not run and the engine releases
inside a collapsed `<details>` block. Every string from the report is escaped for Markdown and HTML
(`md`): a config value can neither open a link, an image or a tag, break a table row, nor mention a
user.
"""

from __future__ import annotations

import html
import re

from dflash_compat.checker.findings import Finding
from dflash_compat.checker.report import Report
from dflash_compat.emitters import counts
from dflash_compat.emitters._safe import printable

__all__ = ["render", "md"]

# what is markup in the middle of a line (a value never starts one): emphasis, code, links, tables, strikes
_PUNCT = re.compile(r"([\\`*_\[\]|~])")
_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}


def md(value) -> str:
    """`value` as inert Markdown text inside a line: control characters escaped (`printable`), `<`, `>`,
    `&` as HTML entities, inline Markdown punctuation backslash-escaped, `@` as an entity (no mention)."""
    text = " ".join(printable(value, keep_newlines=True).split())
    text = html.escape(text, quote=False)  # & < > first: the escapes below add no new ones
    text = _PUNCT.sub(r"\\\1", text)
    return text.replace("@", "&#64;")


def _verdict(report: Report, backend: str) -> str:
    verdict = report.summary.verdict[backend]
    if verdict == "fail":
        return "❌ **fail**"
    if verdict == "warn":
        return "❌ **fail** (warnings, --strict)" if report.strict else "⚠️ pass, with warnings"
    return "✅ pass"


def _overall(report: Report) -> str:
    verdicts = [report.summary.verdict[b] for b in report.backends]
    if "fail" in verdicts or (report.strict and "warn" in verdicts):
        return "❌ dflash-check: the draft does not fit the target"
    if "warn" in verdicts:
        return "⚠️ dflash-check: the draft fits, with warnings"
    return "✅ dflash-check: the draft fits the target"


def _pair(report: Report) -> list[str]:
    t, d = report.target, report.draft
    target = ", ".join(str(x) for x in (t.get("model_type"), t.get("num_hidden_layers") and
                                        f"{t.get('num_hidden_layers')} layers") if x)
    draft = ", ".join(str(x) for x in (d.get("format"), d.get("block_size") and f"block {d.get('block_size')}") if x)
    return [f"**target** {md(t.get('source'))}" + (f" ({md(target)})" if target else "") + "  ",
            f"**draft** {md(d.get('source'))}" + (f" ({md(draft)})" if draft else "")]


def _table(report: Report) -> list[str]:
    lines = ["| backend | verdict | errors | warnings | infos | rules not run |", "|---|---|--:|--:|--:|--:|"]
    for b in report.backends:
        c = report.summary.per_backend[b]
        lines.append(f"| {md(b)} | {_verdict(report, b)} | {c.errors} | {c.warnings} | {c.infos} | "
                     f"{c.rules_skipped} |")
    return lines


def _where(f: Finding) -> str:
    return "; ".join(md(f"{loc.artifact}:{loc.file}" + (f":{loc.key}" if loc.key else "")) for loc in f.locations)


def _finding(f: Finding) -> list[str]:
    scope = "every backend" if f.backend == "common" else f.backend
    lines = [f"- {_ICON[f.severity]} **{md(f.code)}** {md(f.name)} ({md(scope)}): {md(f.message)}  "]
    where = _where(f)
    if where:
        lines.append(f"  at {where}  ")
    lines.append(f"  **fix:** {md(f.fix)}")
    return lines


def _details(report: Report, infos: list[Finding]) -> list[str]:
    body: list[str] = []
    if infos:
        body += ["**Notes**", ""]
        for f in infos:
            body += _finding(f)
        body.append("")
    by_reason: dict[str, list[str]] = {}
    for run in report.rules:
        if run.status == "skipped":
            by_reason.setdefault(run.reason or "skipped", []).append(run.code)
    if by_reason:
        body += ["**Rules not run**", ""]
        body += [f"- {md(reason)}: {md(', '.join(codes))}" for reason, codes in by_reason.items()]
        body.append("")
    if report.engines:
        from dflash_compat.checker.report import engines_text

        body.append("**Judged against** " + md(engines_text(report.engines)))
        body.append("")
    if not body:
        return []
    skipped = sum(len(c) for c in by_reason.values())
    summary = f"{len(infos)} info{'' if len(infos) == 1 else 's'}, {skipped} rule{'' if skipped == 1 else 's'} not run"
    return ["<details>", f"<summary>Details: {summary}</summary>", "", *body, "</details>", ""]


def render(report: Report) -> str:
    s = report.summary
    lines = [f"### {_overall(report)}", "", *_pair(report), "", *_table(report), ""]
    strict = " (--strict: warnings fail)" if report.strict else ""
    lines += [f"{counts(s.errors, s.warnings, s.infos)}{strict}", ""]
    shown = [f for f in report.findings if f.severity != "info"]
    infos = [f for f in report.findings if f.severity == "info"]
    if shown:
        lines += ["#### Findings", ""]
        for f in shown:
            lines += _finding(f)
        lines.append("")
    lines += _details(report, infos)
    lines.append(f"<sub>{md(report.tool.name)} {md(report.tool.version)}</sub>")
    return "\n".join(lines).rstrip() + "\n"
