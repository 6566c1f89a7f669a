"""`--format junit`: one test suite per backend, one test case per rule; errors are failures."""

from __future__ import annotations

from typing import Sequence
from xml.etree import ElementTree as ET

from ..report import Report

__all__ = ["emit"]


def _skipped(report: Report, rule) -> bool:
    """Deep rules whose facts were not gathered did not run: report them as skipped, not passed."""
    return not all(report.gathered(fact) for fact in rule.needs)


def emit(report: Report, rules: Sequence = ()) -> str:
    root = ET.Element("testsuites", name="dflash-check")
    total_fail = total = 0
    for backend in report.backends:
        suite = ET.SubElement(root, "testsuite", name=f"dflash-check.{backend}")
        cases = failures = skipped = 0
        applicable = [r for r in rules if "common" in r.backends or backend in r.backends]
        for rule in applicable:
            found = [f for f in report.findings if f.code == rule.code and f.backend in (backend, "common")]
            case = ET.SubElement(suite, "testcase", classname=f"dflash-check.{backend}", name=f"{rule.code} {rule.name}")
            cases += 1
            if _skipped(report, rule):
                ET.SubElement(case, "skipped", message="deep facts not gathered (--no-deep, or torch/mlx missing)")
                skipped += 1
                continue
            errors = [f for f in found if f.severity == "error"]
            if errors:
                failures += 1
                fail = ET.SubElement(case, "failure", message=errors[0].message, type=rule.code)
                fail.text = "\n".join(f"{f.message}\nfix: {f.fix}" for f in errors)
            others = [f for f in found if f.severity != "error"]
            if others:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"{f.severity}: {f.message}\nfix: {f.fix}" for f in others)
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        total += cases
        total_fail += failures
    root.set("tests", str(total))
    root.set("failures", str(total_fail))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
