"""Terminal output: whether to colour and how wide to wrap (one policy for every command), and the
rule docs and smoke results, rendered with an injected Console (testable at a fixed width, no colour).
The check report's text format is dflash_compat.emitters.text.

Colour only on a terminal: never in a pipe or a CI log unless FORCE_COLOR asks; NO_COLOR and
TERM=dumb turn it off (NO_COLOR wins). The width is COLUMNS when set, else the terminal's, else 80.
Every layout fits 80 columns; below that, lines wrap at words and tables turn into lists. Every
command's terminal output goes through `make_console` (check, rules, rule, smoke, probe, recommend);
`serve` prints a shell script, which is never coloured, wrapped to the same width.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from typing import IO, TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.console import Console
    from rich.text import Text

    from dflash_compat.engine import Rule

__all__ = ["color_enabled", "terminal_width", "make_console", "wrap", "print_paragraph", "render_rules", "render_rule",
           "render_smoke"]

_MIN_WIDTH = 40


def color_enabled(stream: IO) -> bool:
    """ANSI styles for `stream`: NO_COLOR (set, non-empty) or TERM=dumb say no, FORCE_COLOR (set,
    non-empty, not 0) says yes, otherwise only when the stream is a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def _isatty(stream: IO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False


def terminal_width(stream: IO) -> int:
    """COLUMNS when it is a positive number, else the terminal's width, else 80 (pipes, CI logs)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), _MIN_WIDTH)
    if _isatty(stream):
        try:
            return max(os.get_terminal_size(stream.fileno()).columns, _MIN_WIDTH)
        except (OSError, ValueError):
            pass
    return 80


def make_console(stderr: bool = False, width: Optional[int] = None, no_color: bool = False) -> "Console":
    """A Console on stdout (or stderr) that follows `color_enabled` and `terminal_width`."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    color = color_enabled(stream) and not no_color
    return Console(file=stream, width=width or terminal_width(stream), force_terminal=True if color else None,
                   no_color=not color, color_system="standard" if color else None, highlight=False,
                   soft_wrap=False)


def wrap(text: str, width: int, indent: int = 0, first: Optional[int] = None) -> list[str]:
    """`text` in lines of at most `width` columns with a hanging `indent` (the first line starts at
    column `first`, default `indent`; indents are included). Words are never split: a config key
    or a path longer than a line stays whole and overflows it."""
    first = indent if first is None else first
    wrapper = textwrap.TextWrapper(width=max(width, indent + 10), initial_indent=" " * first,
                                   subsequent_indent=" " * indent, break_long_words=False,
                                   break_on_hyphens=False)
    if _GLUE not in text:  # a short `code span` stays on one line: its spaces are glued while wrapping
        text = _CODE_SPAN.sub(lambda m: m.group().replace(" ", _GLUE), text)
    return [line.replace(_GLUE, " ") for line in wrapper.wrap(text)] or [" " * first]


def wrap_block(lines: Sequence[str], stream: IO, indent: int = 4) -> str:
    """Message lines for `stream`, each wrapped at its width (`terminal_width`) with a hanging `indent`,
    words (paths, config keys) never split."""
    width = terminal_width(stream)
    return "\n".join(part for line in lines for part in wrap(line, width, indent=indent, first=0))


def error_text(line: str, stream: IO) -> str:
    """A one-line error as printed: wrapped at the terminal's width with a hanging indent when `stream`
    is a terminal, else left whole (one line a CI log or a script can grep)."""
    if not _isatty(stream):
        return line
    return "\n".join(wrap(line, terminal_width(stream), indent=4, first=0))


_GLUE = "\x1f"  # not whitespace to textwrap, and never in printed text (`_safe.printable` escapes it)
_CODE_SPAN = re.compile(r"`[^`\n]{1,40}`")


def _print(console: "Console", line: "Text | str") -> None:
    console.print(line, soft_wrap=True, crop=False, markup=False)  # lines come wrapped already


def print_paragraph(console: "Console", text: str, indent: int = 2, style: str = "", head: str = "",
                    head_style: str = "bold") -> None:
    """`head` (styled) then `text`, wrapped to the console's width at words with a hanging `indent`.
    Both are printed as plain text (never markup); escape what came from outside before (`_safe.printable`)."""
    from rich.text import Text

    lines = wrap(f"{head}{text}", console.width, indent=indent, first=0)
    for i, line in enumerate(lines):
        out = Text(line, style=style)
        if i == 0 and head:
            out.stylize(head_style, 0, len(head))
        _print(console, out)


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
    from dflash_compat.engine import BACKENDS

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
