"""All rich rendering lives here, with an injected Console so output is testable at a fixed width."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console
    from rich.table import Table

    from .engine import Rule
    from .report import Report

__all__ = ["make_console", "render_report", "render_rules", "render_rule", "render_smoke"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"pass": "[bold green]pass[/]", "warn": "[bold yellow]pass, with warnings[/]", "fail": "[bold red]FAIL[/]"}


def make_console(stderr: bool = False, width: Optional[int] = None, no_color: bool = False) -> "Console":
    from rich.console import Console

    return Console(stderr=stderr, width=width, no_color=no_color, highlight=False, soft_wrap=False)


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


def render_report(report: "Report", console: "Console") -> None:
    """Header, findings grouped by backend (common first), then one verdict line per backend."""
    from rich.markup import escape
    from rich.table import Table

    t, d = report.target, report.draft
    console.print(
        f"[bold]target[/] {escape(str(t.get('source')))}  ({t.get('model_type')}, {t.get('num_hidden_layers')} layers, "
        f"hidden {t.get('hidden_size')}, vocab {t.get('vocab_size')})"
    )
    console.print(
        f"[bold]draft[/]  {escape(str(d.get('source')))}  ({d.get('format')}, block {d.get('block_size')}, "
        f"layer ids {d.get('target_layer_ids')}, mask {d.get('mask_token_id')})"
    )
    for item in d.get("inherited") or ():
        value = "the target's" if item.get("value") is None else repr(item.get("value"))
        console.print(f"  [dim]not in the draft config:[/] {escape(str(item.get('field')))} = {escape(value)}: "
                      f"{escape(str(item.get('detail')))}")
    for group in ["common", *report.backends]:
        rows = [f for f in report.findings if f.backend == group]
        if not rows:
            continue
        console.print()
        console.print("[bold]common[/] (every backend)" if group == "common" else f"[bold]{group}[/]")
        console.print(_findings_table(rows))
    console.print()
    verdicts = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col in ("backend", "verdict", "errors", "warnings", "infos"):
        verdicts.add_column(col, no_wrap=True)
    for backend in report.backends:
        mine = [f for f in report.findings if f.backend in (backend, "common")]
        verdicts.add_row(
            backend,
            _VERDICT[report.summary.verdict[backend]],
            str(sum(f.severity == "error" for f in mine)),
            str(sum(f.severity == "warning" for f in mine)),
            str(sum(f.severity == "info" for f in mine)),
        )
    console.print(verdicts)
    s = report.summary
    console.print(f"{s.errors} errors, {s.warnings} warnings, {s.infos} infos")


def render_rules(rules: Sequence["Rule"], console: "Console") -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("backends")
    table.add_column("what it checks", overflow="fold")
    for r in rules:
        table.add_row(r.code, r.name, r.severity, ", ".join(r.backends), escape(r.what))
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


def render_smoke(payload: dict, console: "Console", divergence: Sequence = (), min_acceptance: Optional[float] = None) -> None:
    """`dflash-check smoke`: one row per prompt, the acceptance histogram and the verdict."""
    from rich.table import Table

    console.print(
        f"[bold]smoke[/] backend {payload['backend']}, device {payload['device']}, dtype {payload['dtype']}, "
        f"block size {payload['block_size']}, temperature {payload['temperature']}"
    )
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False)
    for name in ("prompt", "prompt tokens", "new tokens", "lossless", "tau", "tok/s", "baseline tok/s"):
        table.add_column(name, justify="right" if name != "lossless" else "left", no_wrap=True)
    for i, r in enumerate(payload["results"]):
        div = divergence[i] if i < len(divergence) else None
        if r["lossless"] is None:
            lossless = "[dim]n/a (sampled)[/]"
        elif r["lossless"]:
            lossless = "[green]yes[/]"
        else:
            lossless = "[bold red]NO[/]" + (f" (differs at token {div})" if div is not None else "")
        table.add_row(
            str(r["prompt_index"]), str(len(r["prompt_tokens"])), str(len(r["output_tokens"])), lossless,
            f"{r['mean_acceptance']:.2f}", f"{r['decode_tokens_per_s']:.1f}", f"{r['baseline_tokens_per_s']:.1f}",
        )
    console.print(table)
    s = payload["summary"]
    hist = "  ".join(f"{k}:{v}" for k, v in s["histogram"].items())
    console.print(f"acceptance histogram (tokens per step: steps)  {hist}")
    verdict = {True: "[bold green]lossless[/]", False: "[bold red]NOT lossless[/]", None: "lossless not checked (sampling)"}
    line = f"{verdict[s['lossless']]}, mean acceptance {s['mean_acceptance']:.2f}, speed-up {s['speedup']:.2f}x"
    if min_acceptance is not None and s["mean_acceptance"] < min_acceptance:
        line += f"  [bold red]under --min-acceptance {min_acceptance}[/]"
    console.print(line)

