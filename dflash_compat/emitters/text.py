"""`--format text` (the default): findings grouped by backend, a verdict per backend, the rules that
could not run.

A list, not a table, so that it reads the same at 80 columns, in a CI log and on a wide terminal:
each finding is a severity column and a paragraph wrapped to the width with a hanging indent. Words
are never split, so a config key or a path stays whole (a key longer than the line overflows it
rather than being cut). Every string from the report goes through `_safe.printable` and into a rich
`Text` (never markup), so a config value can neither style the output nor send control bytes.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Iterator, Optional

from dflash_compat.checker.findings import Finding
from dflash_compat.checker.report import Report
from dflash_compat.emitters import counts
from dflash_compat.emitters._safe import printable
from dflash_compat.quoting import quote
from dflash_compat.terminal import wrap

if TYPE_CHECKING:  # rich is imported lazily: `--help` must not pay for it
    from rich.text import Text

__all__ = ["render"]

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_INDENT = 9  # "warning  ": the severity column
_MIN_WIDTH = 40


def render(report: Report, width: Optional[int] = 80, color: bool = False) -> str:
    """The report as text `width` columns wide (None: 80); `color` adds ANSI styles."""
    from rich.console import Console

    width = max(width or 80, _MIN_WIDTH)
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, no_color=not color,
                      color_system="standard" if color else None, highlight=False, markup=False)
    for line in _lines(report, width):
        console.print(line, soft_wrap=True, crop=False)  # soft_wrap: the lines are wrapped already
    return buf.getvalue()


def _paragraph(head: "Text", body: str, width: int, indent: int = _INDENT) -> Iterator["Text"]:
    """`head` then `body` wrapped after it, continuation lines indented by `indent`."""
    from rich.text import Text

    if head.cell_len > width - 20:  # a long path in the head: the body starts on the next line
        head.rstrip()
        yield head
        head = Text(" " * indent)
    lines = wrap(body, width, indent=indent, first=head.cell_len)
    yield head + Text(lines[0][head.cell_len:])
    for line in lines[1:]:
        yield Text(line)


def _location(loc) -> str:
    where = f"{loc.artifact}:{loc.file}"
    return printable(f"{where}:{loc.key}" if loc.key else where)


def _finding(f: Finding, width: int) -> Iterator["Text"]:
    from rich.text import Text

    pad = " " * _INDENT
    judged = ", ".join(f"{e} {v}" for e, v in f.judged_for.items())
    yield Text.assemble((f.severity.ljust(_INDENT), _STYLE[f.severity]),
                        (printable(f"{f.code} {f.name}"), "bold"),
                        (printable(f" [{judged}]") if judged and len(judged) + len(f.code) + len(f.name) + 12 <= width
                         else "", "dim"))
    if judged and len(judged) + len(f.code) + len(f.name) + 12 > width:
        yield from _paragraph(Text.assemble(pad, ("judged for ", "dim")), printable(judged), width)
    yield from _paragraph(Text(pad), printable(f.message), width)
    for i, loc in enumerate(f.locations):  # one per line: a key is never wrapped
        yield Text.assemble(pad, ("at " if i == 0 else "   ", "dim"), _location(loc))
    yield from _paragraph(Text.assemble(pad, ("fix: ", "green")), printable(f.fix), width)


def _verdict(report: Report, backend: str) -> tuple[str, str]:
    verdict = report.summary.verdict[backend]
    if verdict == "fail":
        return "FAIL", "bold red"
    if verdict == "warn":
        return ("FAIL (warnings, --strict)", "bold red") if report.strict else ("pass, with warnings", "bold yellow")
    return "pass", "bold green"


def _verdicts(report: Report) -> Iterator["Text"]:
    """backend, verdict and counts in aligned columns (about 70 columns wide at most)."""
    from rich.text import Text

    names = [printable(b) for b in report.backends]
    verdicts = [_verdict(report, b) for b in report.backends]
    w_name = max([len("backend"), *map(len, names)])
    w_verdict = max([len("verdict"), *(len(v) for v, _ in verdicts)])
    numbers = ("errors", "warnings", "infos", "skipped")
    yield Text("  ".join(["backend".ljust(w_name), "verdict".ljust(w_verdict), *numbers]).rstrip(), style="bold")
    for name, backend, (verdict, style) in zip(names, report.backends, verdicts):
        c = report.summary.per_backend[backend]
        counts = [str(n).rjust(len(h)) for n, h in zip((c.errors, c.warnings, c.infos, c.rules_skipped), numbers)]
        yield Text.assemble(name.ljust(w_name), "  ", (verdict, style), " " * (w_verdict - len(verdict)), "  ",
                            "  ".join(counts))


def _skipped(report: Report, width: int) -> Iterator["Text"]:
    """One paragraph per reason: the rules that could not run for it."""
    from rich.text import Text

    by_reason: dict[str, list[str]] = {}
    for run in report.rules:
        if run.status == "skipped":
            by_reason.setdefault(run.reason or "skipped", []).append(run.code)
        elif run.status == "not-applicable" and run.reason and run.reason != "no selected backend":
            # a rule that holds for other engine releases than the ones selected
            by_reason.setdefault(f"at {run.reason}", []).append(run.code)
    for reason, codes in by_reason.items():
        text = printable(f"not run, {reason}: {', '.join(codes)}")
        for line in _paragraph(Text(), text, width, indent=2):
            line.stylize("dim")
            yield line


def _header(label: str, source, details: str, width: int) -> Iterator["Text"]:
    """`target PATH  (details)` on one line when it fits, else the details on the next line (a list of
    layer ids is not broken after its first item)."""
    from rich.text import Text

    head = Text.assemble((label.ljust(7), "bold"), printable(source), "  ")
    details = printable(f"({details})")
    if head.cell_len + len(details) > width:
        head.rstrip()
        yield head
        head = Text(" " * 7)
    yield from _paragraph(head, details, width, indent=7)


def _inherited(items, width: int) -> Iterator["Text"]:
    """The values the draft config leaves out and who supplies them, one paragraph each."""
    from rich.text import Text

    for item in items:
        value = "the target's" if item.get("value") is None else quote(item.get("value"))
        head = Text.assemble("  ", ("not in the draft config:", "dim"), " ")
        body = f"{item.get('field')} = {value}: {item.get('detail')}"
        yield from _paragraph(head, printable(body), width, indent=4)


def _lines(report: Report, width: int) -> Iterator["Text"]:
    from rich.text import Text

    t, d = report.target, report.draft
    yield from _header("target", t.get("source"), f"{t.get('model_type')}, {t.get('num_hidden_layers')} layers, "
                       f"hidden {t.get('hidden_size')}, vocab {t.get('vocab_size')}", width)
    gguf_layers = ((d.get("gguf") or {}).get("keys") or {}).get("dflash.target_layers")
    gguf_note = f" (GGUF dflash.target_layers {quote(gguf_layers)})" if gguf_layers is not None else ""
    yield from _header("draft", d.get("source"), f"{d.get('format')}, block {d.get('block_size')}, "
                       f"layer ids {quote(d.get('target_layer_ids'))}{gguf_note}, mask {d.get('mask_token_id')}",
                       width)
    yield from _inherited(d.get("inherited") or (), width)
    if report.engines:
        from dflash_compat.checker.report import engines_text

        yield from _paragraph(Text.assemble(("engines ", "bold")), printable(engines_text(report.engines)), width,
                              indent=8)
    for group in ["common", *report.backends]:
        rows = [f for f in report.findings if f.backend == group]
        if not rows:
            continue
        yield Text()
        yield Text.assemble(("common", "bold"), " (every backend)") if group == "common" else \
            Text(printable(group), style="bold")
        for f in rows:
            yield Text()
            yield from _finding(f, width)
    yield Text()
    yield from _verdicts(report)
    s = report.summary
    strict = " (--strict: warnings fail)" if report.strict else ""
    yield Text(f"{counts(s.errors, s.warnings, s.infos)}{strict}")
    yield from _skipped(report, width)
