"""Text rendering of `probe` and `recommend` (an injected rich Console, plain at any width), the
per-position acceptance histogram, and the optional matplotlib plot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["histogram_lines", "render_probe", "render_recommend", "plot_profile"]

_BAR = 40


def histogram_lines(per_position: Sequence[float], width: int = _BAR) -> list[str]:
    """One line per draft position: `  k  3 |#########           | 0.45` (plain ASCII for CI logs)."""
    lines = []
    for k, p in enumerate(per_position, 1):
        filled = int(round(max(0.0, min(1.0, p)) * width))
        lines.append(f"  k {k:>2} |{'#' * filled}{' ' * (width - filled)}| {p:.2f}")
    return lines


def _print_histogram(console: "Console", per_position: Sequence[float]) -> None:
    console.print("per-position acceptance: P(draft token k accepted)", markup=False)
    if not per_position:
        console.print("  (no draft positions measured)")
    for line in histogram_lines(per_position):
        console.print(line, markup=False, highlight=False)


def render_probe(payload: dict[str, Any], console: "Console", min_acceptance: Optional[float] = None) -> None:
    from rich.markup import escape
    from rich.table import Table

    server, s = payload["server"], payload["summary"]
    spec = ", ".join(f"{k} {v}" for k, v in server.get("speculative", {}).items())
    console.print(f"[bold]probe[/] {escape(server['url'])}  engine {server['engine']}, model {escape(server['model'])}"
                  + (f"  ({escape(spec)})" if spec else ""))
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False)
    for name in ("prompt", "new tokens", "seconds", "tok/s", "lossless"):
        table.add_column(name, justify="left" if name == "lossless" else "right", no_wrap=True)
    for r in payload["results"]:
        if r["lossless"] is None:
            verdict = "[dim]not checked[/]"
        elif r["lossless"]:
            verdict = "[green]yes[/]"
        else:
            verdict = f"[bold red]NO[/] (differs at token {r['first_divergence']})"
        table.add_row(str(r["prompt_index"]), str(r["completion_tokens"]), f"{r['seconds']:.2f}",
                      f"{r['tokens_per_s']:.1f}", verdict)
    console.print(table)
    if not s["speculation_active"]:
        console.print("[bold red]speculation NOT active[/]: " + escape(
            "no draft steps were counted" if s["counters_source"] != "none" else s["convention"]))
    else:
        console.print(f"speculation active: {s['steps']} verify steps, mean acceptance length tau "
                      f"{s['mean_acceptance']:.2f}")
        console.print(f"  counting: {escape(s['convention'])}", soft_wrap=False)
        console.print(f"  counters: {escape(s['counters_source'])}")
        _print_histogram(console, s["per_position_acceptance"])
    console.print(f"throughput {s['tokens_per_s']:.1f} tokens/s (sequential requests, completion tokens / "
                  "request time)")
    _lossless_line(console, s)
    if min_acceptance is not None and s["speculation_active"] and s["mean_acceptance"] < min_acceptance:
        console.print(f"[bold red]tau {s['mean_acceptance']:.2f} is under --min-acceptance {min_acceptance}[/]")


def _lossless_line(console: "Console", s: dict[str, Any]) -> None:
    from rich.markup import escape

    if s["lossless"] is None:
        console.print("lossless: not checked (pass --reference TARGET with local weights)")
        return
    how = f" (compared by {escape(s['compared_by'])})" if s.get("compared_by") else ""
    if s["lossless"]:
        console.print(f"[bold green]lossless[/]: every output equals the target's own greedy output{how}")
    else:
        console.print(f"[bold red]NOT lossless[/]: the server's greedy output differs from the target's{how}")
    if s.get("reference_mean_acceptance") is not None:
        console.print(f"reference runtime with the same draft: tau {s['reference_mean_acceptance']:.2f}")


def render_recommend(doc: dict[str, Any], console: "Console") -> None:
    from rich.markup import escape
    from rich.table import Table

    prof, cost = doc["profile"], doc["cost"]
    console.print(f"[bold]profile[/] from {prof['source']} ({prof['engine']}), block size {prof['block_size']}, "
                  f"{prof['steps']} steps, tau {prof['mean_acceptance']:.2f}")
    _print_histogram(console, prof["per_position_acceptance"])
    origin = (
        "ASSUMED (no measured cost: pass --draft-cost / --verify-cost-per-token)" if cost["assumed"] else cost["origin"]
    )
    console.print(f"cost model: draft pass {cost['draft']:.3f}, each verified token +{cost['verify_per_token']:.3f} "
                  f"(x one plain target step; {escape(origin)})")
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False, box=None)
    for name in ("K", "E(K) tokens/step", "cost/step", "modelled speed-up"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for row in doc["table"]:
        mark = "<- recommended" if row["k"] == doc["recommended_k"] else ""
        table.add_row(str(row["k"]), f"{row['expected_tokens']:.2f}", f"{row['step_cost']:.2f}",
                      f"{row['speedup']:.2f}x", mark)
    console.print(table)
    measured = prof.get("measured")
    line = f"recommended K = {doc['recommended_k']} (modelled speed-up {doc['modelled_speedup']:.2f}x)"
    if measured:
        line += f"; {prof['source']} measured {measured['speedup']:.2f}x at K = {int(measured['block_size']) - 1}"
    console.print(f"[bold]{escape(line)}[/]")
    for engine, flags in doc["flags"].items():
        console.print(f"  {engine}: {flags}", markup=False, highlight=False)
    for note in doc.get("notes", []):
        console.print(f"  note: {escape(note)}")


def plot_profile(doc: dict[str, Any], path: str) -> None:
    """Per-position acceptance (bars) and the modelled speed-up per K (line) as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..exceptions import MissingDependencyError

        raise MissingDependencyError("--plot needs matplotlib: pip install 'dflash-compat[plot]' "
                                     "(the text histogram above needs nothing)") from None
    per = doc["profile"]["per_position_acceptance"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.bar(range(1, len(per) + 1), per, color="#4c72b0")
    left.set(xlabel="draft position k", ylabel="P(accepted)", ylim=(0, 1), title="per-position acceptance")
    ks = [row["k"] for row in doc["table"]]
    right.plot(ks, [row["speedup"] for row in doc["table"]], marker="o")
    right.axvline(doc["recommended_k"], color="grey", linestyle="--")
    right.set(xlabel="K (draft tokens per step)", ylabel="modelled speed-up", title="speed-up model")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        from ..exceptions import InputError

        raise InputError(f"--plot {path}: cannot write it ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
