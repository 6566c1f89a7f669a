"""Output formats render what the report records: which rules ran, were skipped or did not apply, the
per-backend counts, and --strict."""

from __future__ import annotations

import dataclasses
import json
from xml.etree import ElementTree as ET

import pytest

from dflash_compat.checker.findings import BackendCounts
from dflash_compat.emitters import get_renderer
from tests.test_golden_reports import hand_built_report


def _case(xml: str, name: str) -> ET.Element:
    return next(c for c in ET.fromstring(xml).iter("testcase") if c.get("name").startswith(name))


def _suite(xml: str, backend: str) -> ET.Element:
    return next(s for s in ET.fromstring(xml).iter("testsuite") if s.get("name") == f"dflash-check.{backend}")


def test_junit_follows_the_rule_records():
    xml = get_renderer("junit")(hand_built_report())
    assert _case(xml, "DF701").find("failure") is not None  # a deep rule that ran and failed
    skipped = _case(xml, "DF251").find("skipped")  # a rule whose facts were not gathered
    assert skipped is not None and "mlx-lm, not transformers" in skipped.get("message")
    assert not any(c.get("name").startswith("DF401") for c in ET.fromstring(xml).iter("testcase"))  # not applicable


def test_strict_makes_warnings_failures_in_every_format():
    loose, strict = hand_built_report(), hand_built_report(strict=True)
    assert _case(get_renderer("junit")(loose), "DF108").find("failure") is None
    case = _case(get_renderer("junit")(strict), "DF108")
    assert case.find("failure") is not None and "warning: draft num_target_layers" in case.find("failure").text
    assert int(_suite(get_renderer("junit")(loose), "mlx").get("failures")) == 2  # DF101, DF701
    assert int(_suite(get_renderer("junit")(strict), "mlx").get("failures")) == 4  # and the warnings DF108, DF602
    assert json.loads(get_renderer("json")(strict))["strict"] is True
    assert json.loads(get_renderer("json")(loose))["strict"] is False
    assert "--strict: warnings fail" in get_renderer("github")(strict)
    assert "--strict" not in get_renderer("github")(loose)
    warned = dataclasses.replace(strict, findings=[f for f in strict.findings if f.severity != "error"])
    warned.summary.verdict = {b: "warn" for b in warned.backends}
    assert "FAIL (warnings, --strict)" in get_renderer("text")(warned)
    assert warned.exit_code() == 1 and dataclasses.replace(warned, strict=False).exit_code() == 0


def test_text_shows_the_reports_counts_and_the_rules_not_run():
    report = hand_built_report()
    report.summary.per_backend["vllm"] = BackendCounts(errors=7, warnings=8, infos=9, rules_ran=1, rules_skipped=5)
    text = get_renderer("text")(report, width=120)
    row = next(line for line in text.splitlines() if line.startswith("vllm "))
    assert row.split()[2:] == ["7", "8", "9", "5"]  # rendered from the report, not recounted
    assert "not run, the draft's weight headers were not read (no-safetensors): DF607" in text


def test_json_rule_records_carry_no_docs():
    rules = json.loads(get_renderer("json")(hand_built_report()))["rules"]
    assert {r["status"] for r in rules} == {"ran", "skipped", "not-applicable"}
    assert all("docs" not in r for r in rules)


def test_sarif_describes_cited_rules_from_the_report():
    doc = json.loads(get_renderer("sarif")(hand_built_report()))
    described = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert described["DF101"]["help"]["text"].startswith("What DF101 checks.")
    assert "DF251" not in described  # skipped, no finding cites it


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github"])
def test_every_format_renders_a_report_to_a_string(fmt):
    out = get_renderer(fmt)(hand_built_report())
    assert isinstance(out, str) and out.endswith("\n")


JSON_CASES = [
    {},
    [],
    {"a": {}, "b": [], "c": [{}], "d": [[], [1, [2, {"e": None}]]]},
    {"text": "plain", "esc": "quote \" backslash \\ tab\t nl\n bell\x07 del\x7f", "uni": "é 😀 \u202e \u2028"},
    {"lone": "\ud800 x", "pair": "\ud83d\ude00", "\udc80key": 1, "k\ud800": 2},  # surrogates, also in keys
    {"float": [0.1, -0.0, 1e100, 1.5e-7, float("nan"), float("inf"), -float("inf")], "int": [0, -1, 2**70]},
    {"bools": [True, False, None], "tuple": (1, ("x", 2.5)), 3: "int key", None: "none key", 1.5: "float key"},
    {"1": "str one", 1: "int one"},  # two keys that json_safe makes one: the last value wins
    {"nested": {"deep": {"deeper": [{"deepest": ["\x1b[2J"]}]}}},
    "a bare string",
    12,
    None,
]


@pytest.mark.parametrize("value", JSON_CASES)
def test_json_writer_matches_the_json_module(value):
    """The one-pass writer behind every JSON output writes what json.dumps (indent 2, strict) writes of the
    json_safe copy, byte for byte."""
    from dflash_compat.emitters._safe import dumps, json_safe

    assert dumps(value) == json.dumps(json_safe(value), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def test_json_writer_refuses_what_json_cannot_carry():
    from dflash_compat.emitters._safe import dumps

    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        dumps({"x": [object()]})
