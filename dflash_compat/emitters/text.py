"""`--format text` (the default): findings grouped by backend, a verdict per backend, the rules that
could not run. Rendered with rich into a string, at a fixed width and without colour unless asked."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Optional

from ..report import Report

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console
    from rich.table import Table

__all__ = ["render"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render(report: Report, width: Optional[int] = 80, color: bool = False) -> str:
    """The report as text; `width=None` takes the terminal's width, `color` adds ANSI styles."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, no_color=not color, highlight=False,
                      soft_wrap=False)
    _render(report, console)
    return buf.getvalue()


def _findings_table(rows) -> "Table":
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False, show_lines=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("finding", overflow="fold")
    for f in rows:
        details = escape(f.message)
        if f.locations:
            where = ", ".join(f"{loc.artifact}:{loc.file}:{loc.key}" for loc in f.locations)
            details += f"\n[dim]at {escape(where)}[/]"
        details += f"\n[green]fix:[/] {escape(f.fix)}"
        table.add_row(f"{f.code}\n{f.name}", f"[{_STYLE[f.severity]}]{f.severity}[/]", details)
    return table


def _verdict(report: Report, backend: str) -> str:
    verdict = report.summary.verdict[backend]
    if verdict == "fail":
        return "[bold red]FAIL[/]"
    if verdict == "warn":
        return "[bold red]FAIL[/] (warnings, --strict)" if report.strict else "[bold yellow]pass, with warnings[/]"
    return "[bold green]pass[/]"


def _verdicts_table(report: Report) -> "Table":
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col in ("backend", "verdict", "errors", "warnings", "infos", "skipped"):
        table.add_column(col, no_wrap=True)
    for backend in report.backends:
        counts = report.summary.per_backend[backend]
        table.add_row(backend, _verdict(report, backend), str(counts.errors), str(counts.warnings),
                      str(counts.infos), str(counts.rules_skipped))
    return table


def _skipped_lines(report: Report) -> list[str]:
    """One line per reason: the rules that could not run for it."""
    by_reason: dict[str, list[str]] = {}
    for run in report.rules:
        if run.status == "skipped":
            by_reason.setdefault(run.reason or "skipped", []).append(run.code)
    return [f"not run, {reason}: {', '.join(codes)}" for reason, codes in by_reason.items()]


def _render(report: Report, console: "Console") -> None:
    from rich.markup import escape

    from ..quoting import quote

    t, d = report.target, report.draft
    console.print(
        f"[bold]target[/] {escape(str(t.get('source')))}  ({t.get('model_type')}, {t.get('num_hidden_layers')} layers, "
        f"hidden {t.get('hidden_size')}, vocab {t.get('vocab_size')})"
    )
    console.print(
        f"[bold]draft[/]  {escape(str(d.get('source')))}  ({d.get('format')}, block {d.get('block_size')}, "
        f"layer ids {quote(d.get('target_layer_ids'))}, mask {d.get('mask_token_id')})"
    )
    for group in ["common", *report.backends]:
        rows = [f for f in report.findings if f.backend == group]
        if not rows:
            continue
        console.print()
        console.print("[bold]common[/] (every backend)" if group == "common" else f"[bold]{group}[/]")
        console.print(_findings_table(rows))
    console.print()
    console.print(_verdicts_table(report))
    s = report.summary
    console.print(f"{s.errors} errors, {s.warnings} warnings, {s.infos} infos")
    for line in _skipped_lines(report):
        console.print(f"[dim]{escape(line)}[/]")
