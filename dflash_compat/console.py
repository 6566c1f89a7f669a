"""All rich rendering lives here, with an injected Console so output is testable at a fixed width."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console

    from .engine import Rule
    from .report import Report

__all__ = ["make_console", "render_report", "render_rules", "render_rule"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"pass": "[bold green]PASS[/]", "warn": "[bold yellow]PASS with warnings[/]", "fail": "[bold red]FAIL[/]"}


def make_console(stderr: bool = False, width: Optional[int] = None, no_color: bool = False) -> "Console":
    from rich.console import Console

    return Console(stderr=stderr, width=width, no_color=no_color, highlight=False, soft_wrap=False)


def _where(locs) -> str:
    return "\n".join(f"{loc.artifact}:{loc.file}:{loc.key}" for loc in locs)


def render_report(report: "Report", console: "Console") -> None:
    from rich.table import Table

    t, d = report.target, report.draft
    console.print(
        f"[bold]target[/] {t.get('source')}  ({t.get('model_type')}, {t.get('num_hidden_layers')} layers, "
        f"hidden {t.get('hidden_size')}, vocab {t.get('vocab_size')})"
    )
    console.print(
        f"[bold]draft[/]  {d.get('source')}  ({d.get('format')}, block {d.get('block_size')}, "
        f"layer ids {d.get('target_layer_ids')}, mask {d.get('mask_token_id')})"
    )
    groups = ["common", *report.backends]
    for group in groups:
        rows = [f for f in report.findings if f.backend == group]
        if group == "common" and not rows:
            continue
        if group == "common":
            title = "[bold]common[/] (applies to every backend)"
        else:
            title = f"[bold]{group}[/]: {_VERDICT[report.summary.verdict[group]]}"
        console.print()
        console.print(title)
        if not rows:
            console.print("  no findings")
            continue
        table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False)
        table.add_column("code", no_wrap=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("finding", overflow="fold")
        table.add_column("where", overflow="fold")
        table.add_column("fix", overflow="fold")
        for f in rows:
            table.add_row(
                f"{f.code}\n{f.name}",
                f"[{_STYLE[f.severity]}]{f.severity}[/]",
                f.message,
                _where(f.locations),
                f.fix,
            )
        console.print(table)
    s = report.summary
    console.print()
    verdict = ", ".join(f"{b} {v}" for b, v in s.verdict.items())
    console.print(f"[bold]{s.errors} errors, {s.warnings} warnings, {s.infos} infos[/]  ({verdict})")


def render_rules(rules: Sequence["Rule"], console: "Console") -> None:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("backends")
    table.add_column("what it checks", overflow="fold")
    for r in rules:
        table.add_row(r.code, r.name, r.severity, ", ".join(r.backends), r.what)
    console.print(table)


def render_rule(rule: "Rule", console: "Console") -> None:
    console.print(f"[bold]{rule.code} {rule.name}[/]  ({rule.severity}; {', '.join(rule.backends)})")
    for title, text in (
        ("What it checks", rule.what),
        ("Why it matters", rule.why),
        ("Example", rule.example),
        ("How to fix", rule.fix),
    ):
        console.print()
        console.print(f"[bold]{title}[/]")
        console.print(text, markup=False)
