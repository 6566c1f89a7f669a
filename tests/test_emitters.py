"""Emitters reflect what ran: a deep rule that ran and failed is a JUnit failure, one that could not run is skipped."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from dflash_compat.emitters.junit import emit
from dflash_compat.report import Finding, Location, Report, summarize
from dflash_compat.rules import RULES_BY_CODE


def _report(target: dict, findings: list[Finding]) -> Report:
    return Report(target=target, draft={"source": "d", "weights": None}, backends=["transformers"],
                  findings=findings, summary=summarize(findings, ["transformers"]))


def _case(xml: str, name: str) -> ET.Element:
    return next(c for c in ET.fromstring(xml).iter("testcase") if c.get("name").startswith(name))


def test_deep_rule_that_ran_and_failed_is_a_failure():
    f = Finding(code="DF703", name="target-layers-not-found", severity="error", backend="common",
                message="no decoder-layer list", fix="...", locations=[Location("target", "<module tree>", "")])
    report = _report({"source": "t", "layers_path": None, "deep": {"inspected": True}}, [f])
    case = _case(emit(report, [RULES_BY_CODE["DF703"]]), "DF703")
    assert case.find("failure") is not None and case.find("skipped") is None


def test_deep_rule_without_facts_is_skipped_not_passed():
    report = _report({"source": "t", "layers_path": None, "deep": {}}, [])
    case = _case(emit(report, [RULES_BY_CODE["DF703"], RULES_BY_CODE["DF101"]]), "DF703")
    assert case.find("skipped") is not None
    assert _case(emit(report, [RULES_BY_CODE["DF101"]]), "DF101").find("skipped") is None
