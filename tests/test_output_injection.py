"""Hostile strings from configs (values, keys, model types, paths) cannot break or hijack any output:
no control bytes reach a terminal or a CI log, JUnit stays well-formed XML, JSON and SARIF are strict
and encodable (SARIF valid against the official 2.1.0 schema), rich markup is shown as text, and a
GitHub annotation cannot be forged. Example-based cases, one end-to-end run, and a property test."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dflash_compat.checker.findings import Finding, Location
from dflash_compat.cli.app import cli
from dflash_compat.emitters import FORMATS, get_renderer
from tests.configs import draft, target, write_model
from tests.test_golden_reports import hand_built_report

# The official SARIF 2.1.0 schema, vendored as test data (origin in tests/data/README.md).
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
SARIF = jsonschema.validators.validator_for(SARIF_SCHEMA)(SARIF_SCHEMA)  # draft-04; the schema is checked once below
HOSTILE = [
    "\x1b[31mred\x1b[0m", "\x1b]0;retitled\x07", "bell\x07", "nul\x00byte", "del\x7f", "c1\x9b31m",
    "[/x]", "[bold]styled[/bold]", "[link=https://example.com]x[/link]", "::error::forged",
    "%0A::error::forged", "line\n::error file=x::forged", "cr\r::warning::forged", "100%", "a,b:c",
    "\ud800", "\udfff lone", "\u202eevil", "\u2028sep", "<tag attr='x'>&amp;</tag>", "]]>", "\ufffe",
]
ANNOTATION = re.compile(r"^::(error|warning|notice)( (file|title)=[^,:]*(,(file|title)=[^,:]*)*)?::[^\r\n]*$")


def hostile_report(text: str, number: float = float("inf")):
    """The hand-built report with `text` in every place a config can put a string, and `number` in a
    numeric field."""
    report = hand_built_report()
    report.target.update(source=f"org/{text}", model_type=text, hidden_size=number)
    report.draft.update(source=f"./{text}", target_layer_ids=[1, number])
    findings = [dataclasses.replace(f, message=f"{f.message} {text}", fix=f"{text} {f.fix}",
                                    locations=[Location(loc.artifact, f"{text}.json", text) for loc in f.locations])
                for f in report.findings]
    findings.append(Finding("DF101", "hidden-size-mismatch", "error", "common", text, text,
                            [Location("target", "config.json", text)]))
    return dataclasses.replace(report, findings=findings)


def _no_nan(name):
    raise ValueError(f"non-standard JSON constant {name}")


def assert_outputs_valid(report) -> None:
    """All five formats render, encode as UTF-8 and parse; text and annotations carry no control bytes."""
    outputs = {fmt: get_renderer(fmt)(report) for fmt in FORMATS}
    for fmt, out in outputs.items():
        out.encode("utf-8")  # no lone surrogate left
        controls = {c for c in out if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F}
        if fmt in ("text", "github", "junit"):
            assert not controls, (fmt, controls)
    for fmt in ("json", "sarif"):
        json.loads(outputs[fmt], parse_constant=_no_nan)
    SARIF.validate(json.loads(outputs["sarif"]))
    ET.fromstring(outputs["junit"].encode("utf-8"))
    lines = outputs["github"].splitlines()
    assert len(lines) == len(report.findings) + 1
    for line in lines[:-1]:
        assert ANNOTATION.match(line), line
    assert lines[-1].startswith("dflash-check: ")


def test_the_vendored_sarif_schema_is_a_valid_schema_and_catches_errors():
    SARIF.check_schema(SARIF_SCHEMA)
    doc = json.loads(get_renderer("sarif")(hand_built_report()))
    SARIF.validate(doc)
    doc["runs"][0]["results"][0]["level"] = "fatal"  # not a SARIF level
    with pytest.raises(jsonschema.ValidationError):
        SARIF.validate(doc)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_every_format_stays_valid_with_a_hostile_string(text):
    assert_outputs_valid(hostile_report(text))


def test_text_shows_escapes_and_markup_as_written():
    out = get_renderer("text")(hostile_report("\x1b[31m[bold]x[/bold][/x]\x07"), color=True)
    assert "\\x1b[31m[bold]x[/bold][/x]\\x07" in out  # visible, unstyled, no MarkupError
    assert "\x07" not in out and "\x1b[31m[" not in out


def test_json_is_strict_and_keeps_the_data():
    out = json.loads(get_renderer("json")(hostile_report("\x1b\ud800x", float("nan"))), parse_constant=_no_nan)
    assert out["target"]["hidden_size"] is None and out["draft"]["target_layer_ids"] == [1, None]
    assert out["target"]["model_type"] == "\x1b\ufffdx"  # JSON carries control characters escaped


def test_a_value_cannot_forge_an_annotation():
    out = get_renderer("github")(hostile_report("x\n::error file=forged.py,title=forged::pwned\r%0A"))
    assert not any(line.startswith("::error file=forged.py") for line in out.splitlines())
    assert "%250A" in out  # a literal %0A stays literal after GitHub unescapes it


def test_sarif_uris_are_uri_references():
    doc = json.loads(get_renderer("sarif")(hostile_report("a b\x1b#?")))
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for result in doc["runs"][0]["results"] for loc in result["locations"] if "physicalLocation" in loc]
    assert uris and all(re.fullmatch(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+", u) for u in uris), uris


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_end_to_end_hostile_config(tmp_path, fmt):
    """A target config with an escape sequence, markup and a non-finite number: a report in every format
    (or, should a later input check refuse Infinity, one clean line on stderr)."""
    hostile = "\x1b]0;pwned\x07[/x]\u202e"
    t = write_model(tmp_path / "t", target(model_type=hostile, architectures=[hostile + "ForCausalLM"]))
    d = write_model(tmp_path / "d", draft())
    (d / "config.json").write_text((d / "config.json").read_text().replace('"rope_theta": 1000000', '"rope_theta": Infinity'))
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep", "-f", fmt], catch_exceptions=False)
    if res.exit_code == 2:
        assert len(res.stderr.splitlines()) == 1 and "\x1b" not in res.stderr and "\x07" not in res.stderr
        return
    assert res.exit_code in (0, 1), res.output
    assert "\x07" not in res.stdout and "\x1b]" not in res.stdout
    if fmt in ("json", "sarif"):
        json.loads(res.stdout, parse_constant=_no_nan)
    if fmt == "junit":
        ET.fromstring(res.stdout.encode("utf-8"))


def test_error_lines_carry_no_control_bytes(tmp_path):
    t = write_model(tmp_path / "t", target(hidden_size="\x1b[2J4096\x07"))
    d = write_model(tmp_path / "d", draft())
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep"])
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1
    assert "\x1b" not in res.stderr and "\x07" not in res.stderr


_ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs", "Cc", "Cf", "Zl", "Zp"]),
                      st.sampled_from("[]/%:,\n\r\x1b\x07\\<>&'\""))
_HOSTILE_TEXT = st.one_of(st.text(_ANY_CHAR, max_size=40), st.sampled_from(HOSTILE))
_NUMBER = st.one_of(st.floats(), st.integers(min_value=-(2**80), max_value=2**80))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_HOSTILE_TEXT, number=_NUMBER)
def test_property_every_format_stays_valid(text, number):
    assert_outputs_valid(hostile_report(text, number))


# --- serve, probe, recommend: the same escaping, the same width -----------------------------------------
def _probe_payload(text: str) -> dict:
    """A probe result as `serving.probe.run_probe` returns it, with `text` wherever a server answers."""
    summary = {"speculation_active": True, "counters_source": text, "convention": text, "steps": 12,
               "mean_acceptance": 3.5, "per_position_acceptance": [0.9, 0.5], "tokens_per_s": float("inf"),
               "lossless": False, "compared_by": text, "reference_mean_acceptance": None}
    result = {"prompt_index": 0, "completion_tokens": 8, "seconds": 0.5, "tokens_per_s": 16.0, "lossless": False,
              "first_divergence": 3}
    return {"schema_version": 1, "server": {"url": f"http://127.0.0.1:1/{text}", "engine": "vllm", "model": text,
                                            "speculative": {"method": text}},
            "results": [result], "summary": summary}


def _console(width: int = 80):
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), width=width, no_color=True, color_system=None, highlight=False)


@pytest.mark.parametrize("text", HOSTILE)
def test_probe_and_recommend_text_show_a_servers_strings_as_escapes(text):
    from dflash_compat.cli.commands.recommend import recommend_doc
    from dflash_compat.liveprobe.render import render_probe, render_recommend

    console = _console()
    render_probe(_probe_payload(text), console)
    profile = {"source": text, "engine": text, "block_size": 3, "steps": 5, "mean_acceptance": 2.0,
               "per_position_acceptance": [0.9, 0.5], "convention": text, "cost": None, "measured": None}
    render_recommend(recommend_doc(profile, None, text), console)
    out = console.file.getvalue()
    assert not {c for c in out if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F}, repr(out)
    assert not any(0xD800 <= ord(c) <= 0xDFFF or c in "\u202e\u2028" for c in out)
    if text.startswith("[bold]"):
        assert "[bold]styled[/bold]" in out  # markup is shown as written


def test_probe_json_is_strict(monkeypatch):
    from dflash_compat.emitters._safe import dumps

    doc = json.loads(dumps(_probe_payload("\ud800 x")), parse_constant=_no_nan)
    assert doc["summary"]["tokens_per_s"] is None and doc["server"]["model"] == "\ufffd x"


def test_serve_script_comments_cannot_end_early(tmp_path):
    """A hostile architecture name reaches the script only inside `#` comments, as escapes."""
    hostile = "X\nrm -rf ~\x1b[2J\u2028"
    t = write_model(tmp_path / "t", target(architectures=[hostile + "ForCausalLM"]))
    d = write_model(tmp_path / "d", draft())
    res = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "vllm",
                                                       "--no-deep"])
    assert res.exit_code in (0, 1), res.output
    assert "\x1b" not in res.stdout and "\u2028" not in res.stdout and "\\x1b[2J" in res.stdout
    commented = [line for line in res.stdout.splitlines() if "rm -rf" in line]
    assert commented and all(line.startswith("#") for line in commented)
    json_res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "--engine", "vllm", "--no-deep",
                                        "-f", "json"])
    json.loads(json_res.stdout, parse_constant=_no_nan)
