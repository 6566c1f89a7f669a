"""`dflash-check launch` output: every format names the user's FILE:LINE:COLUMN for a launch finding.

text (one block per launch), json (one document, a report per launch), sarif (regions), github (workflow
commands with file/line/col), junit (a suite per launch), markdown (a table). Strings from the files go
through `_safe` as in every other format: escaped, never raw.
"""

from __future__ import annotations

import posixpath
from typing import Optional, Sequence
from urllib.parse import quote as url_quote

from dflash_compat import __version__
from dflash_compat.checker.findings import Location
from dflash_compat.emitters import counts
from dflash_compat.emitters._safe import dumps, github_data, github_property, printable
from dflash_compat.pipeline.launch import FileResult, LaunchReport
from dflash_compat.terminal import wrap

__all__ = ["FORMATS", "render", "exit_code"]

FORMATS = ("text", "json", "sarif", "junit", "github", "markdown")
_SCHEMA_VERSION = 1


def exit_code(results: Sequence[FileResult], strict: bool) -> int:
    """The worst of the files: 2 where one could not be read, else 1 where a launch fails, else 0."""
    if any(f.error for f in results):
        return 2
    return 1 if any(r.report.exit_code(strict) for f in results for r in f.launches) else 0


def _unread(results: Sequence[FileResult]) -> str:
    n = sum(1 for f in results if f.error)
    return f"; {n} file{'s' if n != 1 else ''} not read" if n else ""


def _where(loc: Location, lr: LaunchReport) -> str:
    line = getattr(loc, "line", 0)
    if line:
        return f"{loc.file}:{line}:{getattr(loc, 'column', 0) or 1}"
    source = (lr.report.target if loc.artifact == "target" else lr.report.draft).get("source") or loc.artifact
    return f"{loc.artifact}:{source}/{loc.file}:{loc.key}"


def _path(loc: Location, lr: LaunchReport) -> Optional[str]:
    if getattr(loc, "line", 0):
        return posixpath.normpath(loc.file)
    if loc.file.startswith("<"):
        return None
    source = (lr.report.target if loc.artifact == "target" else lr.report.draft).get("source") or loc.artifact
    return posixpath.normpath(f"{str(source).rstrip('/')}/{loc.file}")


def command_lines(argv: Sequence[str], width: int) -> list[str]:
    """The argv as a shell command (every word quoted by shlex), broken with backslash-newlines before a
    flag (`-x` or `--x`) where the line would pass `width`; a flag stays with its value."""
    import shlex

    groups: list[str] = []
    open_flag = False  # the last group is a flag still without its value
    for raw in argv:
        word = shlex.quote(raw)
        is_flag = raw.startswith("-") and len(raw) > 1 and not raw[1:2].isdigit()
        if open_flag and not is_flag:
            groups[-1] += " " + word
            open_flag = False
        else:
            groups.append(word)
            open_flag = is_flag
    lines = [groups[0]] if groups else []
    for group in groups[1:]:
        if len(lines[-1]) + 1 + len(group) + 2 > width:
            lines[-1] += " \\"
            lines.append("    " + group)
        else:
            lines[-1] += " " + group
    return lines


def _short(value: object) -> str:
    text = "(none)" if value is None else str(value)
    return text if len(text) <= 120 else f"{text[:120]}... ({len(text) - 120} more characters)"


def _head(lr: LaunchReport) -> str:
    launch = lr.launch
    ctx = f" [{launch.context}]" if launch.context else ""
    return f"{launch.file}:{launch.line}:{launch.column}: {lr.version.describe()}{ctx}"


# ----------------------------------------------------------------------------------------------- text


def _text(results: Sequence[FileResult], width: int, fix: bool, strict: bool) -> str:
    out: list[str] = []
    total = [0, 0, 0]
    for fr in results:
        if fr.error:
            out += wrap(printable(f"dflash-check: error: {fr.error_text}"), width, indent=4, first=0)
            out.append("")
            continue
        if not fr.launches:
            out += wrap(printable(f"{fr.file}: no engine launch found ({fr.kind})"), width, indent=4, first=0)
            continue
        for lr in fr.launches:
            out += wrap(printable(_head(lr)), width, indent=4, first=0)
            refs = f"target {_short(lr.launch.target)}  draft {_short(lr.launch.draft)}"
            out += wrap(printable(refs), width, indent=4)
            for f in lr.report.findings:
                loc = f.locations[0] if f.locations else None
                at = _where(loc, lr) if loc is not None else f"{lr.launch.file}:{lr.launch.line}:{lr.launch.column}"
                out += wrap(printable(f"{at}: {f.severity} {f.code} {f.name}"), width, indent=4, first=0)
                out += wrap(printable(f.message), width, indent=4)
                out += wrap(printable(f"fix: {f.fix}"), width, indent=4)
            if fix and lr.fixed is not None:
                out.append("  corrected command:")
                out += ["    " + printable(line) for line in command_lines(lr.fixed, width - 4)]
            s = lr.report.summary
            verdict = next(iter(s.verdict.values()), "pass")
            out.append(f"  verdict: {verdict} ({counts(s.errors, s.warnings, s.infos)})")
            for i, n in enumerate((s.errors, s.warnings, s.infos)):
                total[i] += n
            out.append("")
    n = sum(len(fr.launches) for fr in results)
    strict_note = " (--strict: warnings fail)" if strict else ""
    out.append(f"{n} launch{'es' if n != 1 else ''} in {len(results)} file{'s' if len(results) != 1 else ''}: "
               f"{counts(*total)}{_unread(results)}{strict_note}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------- json


def _json(results: Sequence[FileResult], strict: bool) -> str:
    doc = {
        "schema_version": _SCHEMA_VERSION,
        "tool": {"name": "dflash-check", "version": __version__},
        "strict": strict,
        "files": [{"file": fr.file, "kind": fr.kind, "launches": len(fr.launches),
                   **({"error": {"line": fr.error_line, "message": fr.error}} if fr.error else {})}
                  for fr in results],
        "launches": [lr.to_dict() for fr in results for lr in fr.launches],
        "exit_code": exit_code(results, strict),
    }
    return dumps(doc)


# ---------------------------------------------------------------------------------------------- sarif

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _sarif(results: Sequence[FileResult]) -> str:
    from dflash_compat.emitters.sarif import _rule

    runs_by_code = {}
    engines_by_code: dict = {}  # the releases a rule was judged at (its first launch's), for its citations
    sarif_results = []
    for fr in results:
        for lr in fr.launches:
            for run in lr.report.rules:
                runs_by_code.setdefault(run.code, run)
                engines_by_code.setdefault(run.code, lr.report.engines)
            for f in lr.report.findings:
                locations = []
                for loc in f.locations:
                    path = _path(loc, lr)
                    entry: dict = {}
                    if not getattr(loc, "line", 0):
                        entry["logicalLocations"] = [{"fullyQualifiedName": f"{loc.artifact}:{loc.key}",
                                                      "kind": "member"}]
                    if path is not None:
                        physical: dict = {"artifactLocation": {"uri": url_quote(path, safe="/", errors="replace")}}
                        if getattr(loc, "line", 0):
                            physical["region"] = {"startLine": loc.line, "startColumn": loc.column or 1}
                        entry["physicalLocation"] = physical
                    locations.append(entry)
                sarif_results.append({
                    "ruleId": f.code, "level": _SARIF_LEVEL[f.severity],
                    "message": {"text": f"[{f.backend}] {f.message}"}, "locations": locations,
                    "properties": {"backend": f.backend, "fix": f.fix, "engine": lr.launch.engine,
                                   "engine_version": lr.version.version, "version_origin": lr.version.origin,
                                   "launch": f"{lr.launch.file}:{lr.launch.line}"},
                })
    used = sorted({r["ruleId"] for r in sarif_results})
    driver_rules = [_rule(runs_by_code[c], engines_by_code[c]) for c in used if c in runs_by_code]
    index = {r["id"]: i for i, r in enumerate(driver_rules)}
    for r in sarif_results:
        if r["ruleId"] in index:
            r["ruleIndex"] = index[r["ruleId"]]
    run: dict = {"tool": {"driver": {"name": "dflash-check", "version": __version__, "rules": driver_rules}},
                 "results": sarif_results}
    unread = [fr for fr in results if fr.error]
    if unread:  # a file that could not be read: a tool notification at its place, and the run not successful
        notes = []
        for fr in unread:
            note: dict = {"level": "error", "message": {"text": fr.error},
                          "descriptor": {"id": "launch-file-unreadable"}}
            if not fr.file.startswith("<"):
                physical: dict = {"artifactLocation": {"uri": url_quote(posixpath.normpath(fr.file), safe="/",
                                                                        errors="replace")}}
                if fr.error_line:
                    physical["region"] = {"startLine": fr.error_line}
                note["locations"] = [{"physicalLocation": physical}]
            notes.append(note)
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notes}]
    return dumps({"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]})


# --------------------------------------------------------------------------------------------- github

_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _github(results: Sequence[FileResult], strict: bool) -> str:
    lines = []
    total = [0, 0, 0]
    for fr in results:
        if fr.error:
            props = [f"file={github_property(fr.file)}"] + ([f"line={fr.error_line}"] if fr.error_line else [])
            lines.append(f"::error {','.join(props)},title={github_property('file not read')}::"
                         f"{github_data(fr.error)}")
            continue
        if not fr.launches:
            lines.append(f"::notice file={github_property(fr.file)}::{github_data('no engine launch found')}")
        for lr in fr.launches:
            for f in lr.report.findings:
                loc = f.locations[0] if f.locations else None
                props = [f"title={github_property(f'{f.code} {f.name} ({f.backend})')}"]
                path = _path(loc, lr) if loc is not None else None
                if loc is not None and getattr(loc, "line", 0):
                    props = [f"file={github_property(path)}", f"line={loc.line}", f"col={loc.column or 1}", *props]
                elif path:
                    props.insert(0, f"file={github_property(path)}")
                lines.append(f"::{_GH_LEVEL[f.severity]} {','.join(props)}::{github_data(f'{f.message} Fix: {f.fix}')}")
            s = lr.report.summary
            for i, n in enumerate((s.errors, s.warnings, s.infos)):
                total[i] += n
    n = sum(len(fr.launches) for fr in results)
    strict_note = "; --strict: warnings fail" if strict else ""
    lines.append(printable(f"dflash-check: {n} launch{'es' if n != 1 else ''}, {counts(*total)}{_unread(results)}"
                           f"{strict_note}"))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- junit


def _junit(results: Sequence[FileResult], strict: bool) -> str:
    from xml.etree import ElementTree as ET

    from dflash_compat.emitters.junit import _make_safe

    root = ET.Element("testsuites", name="dflash-check")
    tests = fails = 0
    failing = ("error", "warning") if strict else ("error",)
    errors = 0
    for fr in results:
        if fr.error:  # a file that could not be read: a suite with one test in error
            suite = ET.SubElement(root, "testsuite", name=f"dflash-check.launch {fr.file}", file=fr.file, tests="1",
                                  failures="0", errors="1")
            case = ET.SubElement(suite, "testcase", classname="dflash-check.launch", name="read the file",
                                 file=fr.file, line=str(fr.error_line or 1))
            ET.SubElement(case, "error", message=fr.error, type="unreadable").text = fr.error_text
            tests, errors = tests + 1, errors + 1
            continue
        for lr in fr.launches:
            suite = ET.SubElement(root, "testsuite", name=f"dflash-check.launch {lr.launch.file}:{lr.launch.line}",
                                  file=lr.launch.file)
            n = nf = 0
            for run in lr.report.rules:
                if run.status == "not-applicable":
                    continue
                n += 1
                case = ET.SubElement(suite, "testcase", classname=f"dflash-check.{lr.launch.engine}",
                                     name=f"{run.code} {run.name}", file=lr.launch.file, line=str(lr.launch.line))
                if run.status == "skipped":
                    ET.SubElement(case, "skipped", message=run.reason or "skipped")
                    continue
                found = [f for f in lr.report.findings if f.code == run.code]
                bad = [f for f in found if f.severity in failing]
                if bad:
                    nf += 1
                    loc = bad[0].locations[0] if bad[0].locations else None
                    if loc is not None and getattr(loc, "line", 0):
                        case.set("line", str(loc.line))
                    failure = ET.SubElement(case, "failure", message=bad[0].message, type=run.code)
                    failure.text = "\n".join(
                        f"{_where(f.locations[0], lr) if f.locations else lr.launch.file}: {f.message}\nfix: {f.fix}"
                        for f in bad)
                others = [f for f in found if f.severity not in failing]
                if others:
                    ET.SubElement(case, "system-out").text = "\n".join(
                        f"{f.severity}: {_where(f.locations[0], lr) if f.locations else ''}: {f.message}"
                        for f in others)
            suite.set("tests", str(n))
            suite.set("failures", str(nf))
            suite.set("errors", "0")
            tests, fails = tests + n, fails + nf
    root.set("tests", str(tests))
    root.set("failures", str(fails))
    root.set("errors", str(errors))
    _make_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ------------------------------------------------------------------------------------------- markdown


def _md_cell(value: object) -> str:
    return printable(value).replace("|", "\\|").replace("\n", " ")


def _markdown(results: Sequence[FileResult], fix: bool) -> str:
    out = ["# dflash-check launch", ""]
    for fr in results:
        if fr.error:
            where = f"{fr.file}:{fr.error_line}" if fr.error_line else fr.file
            out += [f"`{_md_cell(where)}`: **error**: {_md_cell(fr.error)}", ""]
            continue
        if not fr.launches:
            out += [f"`{_md_cell(fr.file)}`: no engine launch found.", ""]
        for lr in fr.launches:
            out += [f"## `{_md_cell(lr.launch.file)}:{lr.launch.line}` {_md_cell(lr.version.describe())}", ""]
            if not lr.report.findings:
                out += ["No findings.", ""]
            else:
                out += ["| where | severity | rule | finding | fix |", "|---|---|---|---|---|"]
                for f in lr.report.findings:
                    where = _where(f.locations[0], lr) if f.locations else lr.launch.file
                    out.append(f"| `{_md_cell(where)}` | {f.severity} | {f.code} {f.name} | {_md_cell(f.message)} | "
                               f"{_md_cell(f.fix)} |")
                out.append("")
            if fix and lr.fixed is not None:
                out += ["```sh", *(printable(line) for line in command_lines(lr.fixed, 76)), "```", ""]
    return "\n".join(out)


def render(results: Sequence[FileResult], fmt: str, *, strict: bool = False, fix: bool = False,
           width: int = 80) -> str:
    if fmt == "json":
        return _json(results, strict)
    if fmt == "sarif":
        return _sarif(results)
    if fmt == "github":
        return _github(results, strict)
    if fmt == "junit":
        return _junit(results, strict)
    if fmt == "markdown":
        return _markdown(results, fix)
    return _text(results, width, fix, strict)
