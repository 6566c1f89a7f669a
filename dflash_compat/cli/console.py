"""The CLI's renderers: rule docs and smoke results, printed with an injected Console (testable at a
fixed width, no colour) that follows `dflash_compat.terminal`'s policy. Every command's terminal
output goes through `make_console` (check, rules, rule, smoke, probe, recommend); `serve` prints a
shell script, which is never coloured, wrapped to the same width. The check report's text format is
dflash_compat.emitters.text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

from dflash_compat.terminal import (  # noqa: F401 (re-exported: the commands import them from here)
    _print,
    color_enabled,
    error_text,
    make_console,
    print_paragraph,
    terminal_width,
    wrap,
    wrap_block,
)

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console
    from rich.text import Text

    from dflash_compat.checker import Rule

__all__ = ["color_enabled", "terminal_width", "make_console", "wrap", "print_paragraph", "render_rules", "render_rule",
           "render_smoke"]

# ---- rules -----------------------------------------------------------------------------------


def render_rules(rules: Sequence["Rule"], console: "Console") -> None:
    """One line per rule: code, severity, name, backends (wrapped under their column when a line
    would pass the width; below about 70 columns the columns give way to one paragraph per rule);
    `rule DFxxx` has the rest."""
    from rich.text import Text

    width, w_name = console.width, max(len(r.name) for r in rules)
    at = 5 + 2 + 8 + 2 + w_name + 2  # column of the backends
    columns = at + len("transformers") <= width
    if columns:
        _print(console, Text(f"{'code':<5}  {'severity':<8}  {'name':<{w_name}}  backends", style="bold"))
    for r in rules:
        severity = Text(f"{r.severity:<8}", style=_SEVERITY_STYLE[r.severity])
        if columns:
            backends = wrap(_engines(r.backends), width, indent=at)
            _print(console, Text.assemble(r.code, "  ", severity, "  ", f"{r.name:<{w_name}}  ", backends[0][at:]))
        else:
            backends = wrap(f"{r.name} ({_engines(r.backends)})", width, indent=17, first=17)
            _print(console, Text.assemble(r.code, "  ", severity, "  ", backends[0][17:]))
        for line in backends[1:]:
            _print(console, line)
    _print(console, "")
    tail = (f"{len(rules)} rules. `dflash-check rule DF101` explains one: what it checks, why it matters, "
            "an example and the fix.")
    for line in wrap(tail, width):
        _print(console, line)


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _engines(backends: Sequence[str]) -> str:
    """A rule's backends in at most 17 columns, so that one line per rule fits 80: a rule judged for
    three or four engines says which it leaves out (`rule DFxxx` and `rules -f json` list them all)."""
    from dflash_compat.checker import BACKENDS

    missing = [b for b in BACKENDS if b not in backends]
    if len(backends) == len(BACKENDS) and not missing:
        return "each engine"
    if len(missing) == 1 and len(backends) == len(BACKENDS) - 1:
        return f"all but {missing[0]}"
    listed = ", ".join(backends)
    return listed if len(listed) <= 17 else f"{len(backends)} engines"


def render_rule(rule: "Rule", console: "Console", versions: Optional[Mapping[str, Any]] = None) -> None:
    """The rule's four documentation sections, each wrapped to the width under its title; its engine
    sources at the selected releases (`versions`: engine -> Selected; None: the newest bundled)."""
    from rich.text import Text

    deep = "; `dflash-check launch` only" if "launch" in rule.needs else \
        ("; deep: " + ", ".join(rule.needs) if rule.needs else "")
    head = f"{rule.code} {rule.name}"
    about = f"({rule.severity}; {', '.join(rule.backends)}{deep})"
    lines = wrap(about, console.width, indent=2, first=len(head) + 2)
    _print(console, Text.assemble((head, "bold"), lines[0][len(head):]))
    for line in lines[1:]:
        _print(console, line)
    if rule.versions:
        holds = ", ".join(f"{e}{spec}" for e, spec in rule.versions.items())
        for line in wrap(f"Holds for {holds}; not run at other releases.", console.width, indent=2):
            _print(console, line)
    for title, text in (("What it checks", rule.what), ("Why it matters", rule.why),
                        ("Example", rule.example), ("How to fix", rule.fix)):
        _print(console, "")
        _print(console, Text(title, style="bold"))
        for paragraph in text.split("\n"):
            for line in wrap(paragraph, console.width, indent=2):
                _print(console, line)
    if rule.sources:
        _print(console, "")
        _print(console, Text("Engine sources", style="bold"))
        for src in rule.sources:  # each citation on its own line, its note wrapped under it
            used = versions[src.engine].used if versions and src.engine in versions else None
            for line in wrap(src.cite(used), console.width, indent=4, first=2):
                _print(console, line)
            for line in wrap(src.note, console.width, indent=4):
                _print(console, line)


# ---- smoke -----------------------------------------------------------------------------------

_SMOKE_COLUMNS = ("prompt", "in", "out", "lossless", "differs at", "tau", "tok/s", "baseline tok/s")


def _smoke_rows(payload: dict, divergence: Sequence) -> list[tuple[str, ...]]:
    rows = []
    for i, r in enumerate(payload["results"]):
        div = divergence[i] if i < len(divergence) else None
        if r["lossless"] is None:
            lossless = "n/a (sampled)"
        else:
            lossless = "yes" if r["lossless"] else "near-tie" if r.get("verdict") == "near-tie" else "NO"
        rows.append((str(r["prompt_index"]), str(len(r["prompt_tokens"])), str(len(r["output_tokens"])), lossless,
                     "" if div is None else f"token {div}", f"{r['mean_acceptance']:.2f}",
                     f"{r['decode_tokens_per_s']:.1f}", f"{r['baseline_tokens_per_s']:.1f}"))
    return rows


def _lossless_style(cell: str) -> str:
    return {"yes": "green", "NO": "bold red", "near-tie": "yellow"}.get(cell, "dim")


def _smoke_table(rows: list[tuple[str, ...]], widths: list[int]) -> Iterator["Text"]:
    """Aligned columns; numbers to the right, the lossless verdict to the left."""
    from rich.text import Text

    def cells(row: tuple[str, ...]) -> list[str]:
        return [c.ljust(w) if j in (3, 4) else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))]

    yield Text("  ".join(cells(_SMOKE_COLUMNS)).rstrip(), style="bold")
    for row in rows:
        text = Text()
        for j, cell in enumerate(cells(row)):
            text.append(("  " if j else "") + cell, style=_lossless_style(row[3]) if j == 3 else "")
        text.rstrip()
        yield text


def _smoke_list(rows: list[tuple[str, ...]], width: int) -> Iterator[str]:
    """Below the table's width: one wrapped paragraph per prompt."""
    for p, n_in, n_out, lossless, differs, tau, rate, base in rows:
        where = f" (differs at {differs})" if differs else ""
        text = (f"prompt {p}: {n_in} tokens in, {n_out} out; lossless {lossless}{where}; tau {tau}; "
                f"{rate} tok/s, baseline {base} tok/s")
        yield from wrap(text, width, indent=4, first=0)


def _divergence_line(index: int, div: dict, recheck: Optional[dict]) -> str:
    """One prompt's first difference: the two tokens, their logits in both forwards, the verdict."""
    text = (f"prompt {index}, token {div['index']}: speculative {div['spec_token']}, greedy "
            f"{div['baseline_token']}: {div['verdict']}")
    block, single = div.get("block"), div.get("single")
    if block and single:
        text += (f" (block forward {block['spec_logit']:.6g} vs {block['baseline_logit']:.6g}, one-token forward "
                 f"{single['spec_logit']:.6g} vs {single['baseline_logit']:.6g}; {div['dtype']} tolerance "
                 f"{div['tolerance']:.3g})")
    elif div.get("reason"):
        text += f" ({div['reason']})"
    if recheck:
        if "skipped" in recheck:
            text += f"; float32 recheck skipped: {recheck['skipped']}"
        else:
            text += "; float32 recheck: " + ("lossless" if recheck["lossless"] else
                                             f"differs at token {recheck['differs_at']}")
    return text


def render_smoke(payload: dict, console: "Console", divergence: Sequence = (),
                 min_acceptance: Optional[float] = None) -> None:
    """`dflash-check smoke`: one row per prompt, the acceptance histogram and the verdict. A table
    when it fits the width, else a list (the differing token and tau are never cut off)."""
    from rich.text import Text

    width = console.width
    head = (f"smoke: backend {payload['backend']}, device {payload['device']}, dtype {payload['dtype']}, "
            f"block size {payload['block_size']}, temperature {payload['temperature']}")
    for line in wrap(head, width, indent=2, first=0):
        _print(console, line)
    rows = _smoke_rows(payload, divergence)
    widths = [max(len(c) for c in col) for col in zip(_SMOKE_COLUMNS, *rows)]
    if sum(widths) + 2 * (len(widths) - 1) <= width:
        for line in _smoke_table(rows, widths):
            _print(console, line)
    else:
        for line in _smoke_list(rows, width):
            _print(console, line)
    s = payload["summary"]
    hist = "  ".join(f"{k}:{v}" for k, v in s["histogram"].items())
    for line in wrap(f"acceptance histogram (tokens per step: steps)  {hist}", width, indent=2, first=0):
        _print(console, line)
    word, style = {True: ("lossless", "bold green"), False: ("NOT lossless", "bold red"),
                   None: ("lossless not checked (sampling)", "")}[s["lossless"]]
    runtime = payload.get("runtime") or {}
    if s.get("verdict") == "near-tie":
        word, style = ("near-tie" + (" (--strict: fails)" if runtime.get("strict") else " (not a failure)"),
                       "bold red" if runtime.get("strict") else "bold yellow")
    baseline = f" over {runtime['baseline']}" if runtime.get("baseline") else ""
    verdict = f"{word}, mean acceptance {s['mean_acceptance']:.2f}, speed-up {s['speedup']:.2f}x{baseline}"
    for i, line in enumerate(wrap(verdict, width, indent=2, first=0)):
        text = Text(line)
        if i == 0:
            text.stylize(style, 0, len(word))
        _print(console, text)
    for r in payload["results"]:
        div = r.get("divergence")
        if not div:
            continue
        for line in wrap(_divergence_line(r["prompt_index"], div, r.get("recheck")), width, indent=4, first=2):
            _print(console, line)
    if runtime.get("attention"):
        rates = ", ".join(f"{k} {v:.1f} tok/s" for k, v in (runtime.get("baselines_tokens_per_s") or {}).items())
        line = f"ran with attention {runtime['attention']}, {runtime.get('cache', 'dynamic')} cache; baselines: {rates}"
        for out in wrap(line, width, indent=2, first=0):
            _print(console, out)
    if min_acceptance is not None and s["mean_acceptance"] < min_acceptance:
        _print(console, Text(f"under --min-acceptance {min_acceptance}", style="bold red"))
