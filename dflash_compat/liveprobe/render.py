"""Text rendering of `probe` and `recommend` (an injected rich Console from `console.make_console`: its
colour and width policy), the per-position acceptance histogram, and the optional matplotlib plot.
Paragraphs wrap at words to the console's width; strings from a server or a profile go through
`_safe.printable`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from dflash_compat.emitters._safe import printable
from dflash_compat.terminal import print_paragraph

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
    _line(console, "per-position acceptance: P(draft token k accepted)")
    if not per_position:
        _line(console, "  (no draft positions measured)")
    for line in histogram_lines(per_position):
        _line(console, line)


def _line(console: "Console", text: str, style: str = "") -> None:
    """One line we composed (already short), printed as plain text."""
    console.print(text, style=style or None, markup=False, highlight=False, soft_wrap=True, crop=False)


def render_probe(payload: dict[str, Any], console: "Console", min_acceptance: Optional[float] = None) -> None:
    """The probe's table and summary. Everything the server sent (model name, counters, conventions) is
    shown through `printable`: a hostile server cannot style the terminal or send it control bytes."""
    from rich.table import Table
    from rich.text import Text

    server, s = payload["server"], payload["summary"]
    spec = ", ".join(f"{k} {v}" for k, v in server.get("speculative", {}).items())
    print_paragraph(console, printable(f"{server['url']}  engine {server['engine']}, model {server['model']}"
                                       + (f"  ({spec})" if spec else "")), head="probe ")
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False)
    for name in ("prompt", "new tokens", "seconds", "tok/s", "lossless"):
        table.add_column(name, justify="left" if name == "lossless" else "right", no_wrap=True)
    for r in payload["results"]:
        if r["lossless"] is None:
            verdict = Text("not checked", style="dim")
        elif r["lossless"]:
            verdict = Text("yes", style="green")
        else:
            verdict = Text.assemble(("NO", "bold red"), printable(f" (differs at token {r['first_divergence']})"))
        table.add_row(printable(r["prompt_index"]), printable(r["completion_tokens"]), f"{r['seconds']:.2f}",
                      f"{r['tokens_per_s']:.1f}", verdict)
    console.print(table)
    if not s["speculation_active"]:
        why = "no draft steps were counted" if s["counters_source"] != "none" else s["convention"]
        print_paragraph(console, printable(why), head="speculation NOT active: ", head_style="bold red")
    else:
        print_paragraph(console, f"speculation active: {s['steps']} verify steps, mean acceptance length tau "
                        f"{s['mean_acceptance']:.2f}", indent=2)
        print_paragraph(console, printable(f"  counting: {s['convention']}"), indent=4)
        print_paragraph(console, printable(f"  counters: {s['counters_source']}"), indent=4)
        _print_histogram(console, s["per_position_acceptance"])
    print_paragraph(console, f"throughput {s['tokens_per_s']:.1f} tokens/s (sequential requests, completion tokens / "
                    "request time)")
    _lossless_line(console, s)
    if min_acceptance is not None and s["speculation_active"] and s["mean_acceptance"] < min_acceptance:
        _line(console, f"tau {s['mean_acceptance']:.2f} is under --min-acceptance {min_acceptance}", "bold red")


def _lossless_line(console: "Console", s: dict[str, Any]) -> None:
    if s["lossless"] is None:
        print_paragraph(console, "lossless: not checked (pass --reference TARGET with local weights)")
        return
    how = printable(f" (compared by {s['compared_by']})") if s.get("compared_by") else ""
    if s["lossless"]:
        print_paragraph(console, f"every output equals the target's own greedy output{how}", head="lossless: ",
                        head_style="bold green")
    else:
        print_paragraph(console, f"the server's greedy output differs from the target's{how}", head="NOT lossless: ",
                        head_style="bold red")
    if s.get("reference_mean_acceptance") is not None:
        print_paragraph(console, f"reference runtime with the same draft: tau {s['reference_mean_acceptance']:.2f}")


def _flag_lines(head: str, flags: str, width: int) -> list[str]:
    """`head + flags` on one line when it fits `width`, else one `--flag value` per line ending in a
    shell continuation (a flag and its value are never split)."""
    if len(head) + len(flags) <= width:
        return [head + flags]
    words = flags.split(" ")
    groups: list[str] = []
    for word in words:
        if groups and not word.startswith("--"):
            groups[-1] += " " + word
        else:
            groups.append(word)
    lines = [head.rstrip() + " \\"]
    lines += [f"      {g}" + (" \\" if i < len(groups) - 1 else "") for i, g in enumerate(groups)]
    return lines


def render_recommend(doc: dict[str, Any], console: "Console") -> None:
    """The profile's histogram, the modelled table and the recommended K with its flags."""
    from rich.table import Table

    prof, cost = doc["profile"], doc["cost"]
    print_paragraph(console, printable(f"from {prof['source']} ({prof['engine']}), block size {prof['block_size']}, "
                                       f"{prof['steps']} steps, tau {prof['mean_acceptance']:.2f}"), head="profile ")
    _print_histogram(console, prof["per_position_acceptance"])
    origin = (
        "ASSUMED (no measured cost: pass --draft-cost / --verify-cost-per-token)" if cost["assumed"] else cost["origin"]
    )
    print_paragraph(console, printable(f"cost model: draft pass {cost['draft']:.3f}, each verified token "
                                       f"+{cost['verify_per_token']:.3f} (x one plain target step; {origin})"))
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
    print_paragraph(console, printable(line), style="bold")
    for engine, flags in doc["flags"].items():  # flags copied whole: broken only before a flag, with `\\`
        for line in _flag_lines(f"  {engine}: ", flags, console.width):
            _line(console, printable(line))
    for note in doc.get("notes", []):
        print_paragraph(console, printable(f"  note: {note}"), indent=4)


PLOT_SOFTWARE = "dflash-check recommend"  # in the PNG's metadata: how --plot knows a previous plot of ours


def looks_like_plot(head: bytes) -> bool:
    """A PNG that names us as its software (matplotlib writes the tEXt chunk near the start)."""
    return head.startswith(b"\x89PNG") and PLOT_SOFTWARE.encode() in head


def plot_profile(doc: dict[str, Any], path: str, force: bool = False, protected: Sequence[Any] = ()) -> None:
    """Per-position acceptance (bars) and the modelled speed-up per K (line) as a PNG, written like every
    output (safe_write: atomic, never through a symlink, never over a file that is not our plot without
    `force`, never into a model folder)."""
    import io

    from dflash_compat.files.safe_write import check_output, write_output

    check_output(path, force=force, option="--plot", is_ours=looks_like_plot, protected=protected)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from dflash_compat.exceptions import MissingDependencyError

        raise MissingDependencyError("--plot needs matplotlib: pip install 'dflash-compat[plot]', "
                                     "or leave out --plot") from None
    per = doc["profile"]["per_position_acceptance"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.bar(range(1, len(per) + 1), per, color="#4c72b0")
    left.set(xlabel="draft position k", ylabel="P(accepted)", ylim=(0, 1), title="per-position acceptance")
    ks = [row["k"] for row in doc["table"]]
    right.plot(ks, [row["speedup"] for row in doc["table"]], marker="o")
    right.axvline(doc["recommended_k"], color="grey", linestyle="--")
    right.set(xlabel="K (draft tokens per step)", ylabel="modelled speed-up", title="speed-up model")
    fig.tight_layout()
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png", dpi=100, metadata={"Software": PLOT_SOFTWARE})
    finally:
        plt.close(fig)
    write_output(path, png.getvalue(), force=force, option="--plot", is_ours=looks_like_plot, protected=protected)
