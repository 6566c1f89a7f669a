"""`--format junit`: one test suite per backend, one test case per rule that applies to it.

A rule with an error finding is a failure (a warning too, under --strict); a rule that could not
run because a fact it needs was not gathered is skipped, with the report's reason. Every text goes
through `_safe.printable`: XML 1.0 cannot carry most control characters, so they appear escaped.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from dflash_compat.checker.findings import Finding, RuleRun
from dflash_compat.checker.report import Report
from dflash_compat.emitters._safe import printable

__all__ = ["render"]


def _case(suite: ET.Element, backend: str, rule: RuleRun, found: list[Finding], strict: bool) -> str:
    """Add one test case; returns its outcome: failed, skipped or passed."""
    case = ET.SubElement(suite, "testcase", classname=f"dflash-check.{backend}", name=f"{rule.code} {rule.name}")
    if rule.status == "skipped":
        ET.SubElement(case, "skipped", message=rule.reason or "skipped")
        return "skipped"
    failing = ("error", "warning") if strict else ("error",)
    failures = [f for f in found if f.severity in failing]
    if failures:
        fail = ET.SubElement(case, "failure", message=failures[0].message, type=rule.code)
        fail.text = "\n".join(
            (f"{f.message}" if f.severity == "error" else f"{f.severity}: {f.message}") + f"\nfix: {f.fix}"
            for f in failures)
    others = [f for f in found if f.severity not in failing]
    if others:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(f"{f.severity}: {f.message}\nfix: {f.fix}" for f in others)
    return "failed" if failures else "passed"


def _make_safe(root: ET.Element) -> None:
    """Escape what XML 1.0 forbids (and what a terminal showing the file must not get) in every text
    and attribute value."""
    for el in root.iter():
        for key, value in el.attrib.items():
            el.set(key, printable(value))
        if el.text:
            el.text = printable(el.text, keep_newlines=True)


def render(report: Report) -> str:
    root = ET.Element("testsuites", name="dflash-check")
    total_fail = total = 0
    for backend in report.backends:
        suite = ET.SubElement(root, "testsuite", name=f"dflash-check.{backend}")
        outcomes = [
            _case(suite, backend, rule,
                  [f for f in report.findings if f.code == rule.code and f.backend in (backend, "common")],
                  report.strict)
            for rule in report.rules if rule.applies_to(backend)
        ]
        suite.set("tests", str(len(outcomes)))
        suite.set("failures", str(outcomes.count("failed")))
        suite.set("errors", "0")
        suite.set("skipped", str(outcomes.count("skipped")))
        total += len(outcomes)
        total_fail += outcomes.count("failed")
    root.set("tests", str(total))
    root.set("failures", str(total_fail))
    _make_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
