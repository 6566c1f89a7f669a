"""Rich rendering of the rule docs and the smoke results, with an injected Console (testable at a fixed
width). The check report's text format is dflash_compat.emitters.text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console

    from .engine import Rule

__all__ = ["make_console", "render_rules", "render_rule", "render_smoke"]


def make_console(stderr: bool = False, width: Optional[int] = None, no_color: bool = False) -> "Console":
    from rich.console import Console

    return Console(stderr=stderr, width=width, no_color=no_color, highlight=False, soft_wrap=False)


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


def render_smoke(payload: dict, console: "Console", divergence: Sequence = (),
                 min_acceptance: Optional[float] = None) -> None:
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
    verdict = {True: "[bold green]lossless[/]", False: "[bold red]NOT lossless[/]",
               None: "lossless not checked (sampling)"}
    line = f"{verdict[s['lossless']]}, mean acceptance {s['mean_acceptance']:.2f}, speed-up {s['speedup']:.2f}x"
    if min_acceptance is not None and s["mean_acceptance"] < min_acceptance:
        line += f"  [bold red]under --min-acceptance {min_acceptance}[/]"
    console.print(line)

