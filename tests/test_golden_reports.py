"""Every output format is pinned by golden files, twice:

- `report.*`: each format renders ONE hand-built Report (below). Its messages are written here, not
  by the rules, so a rule whose wording changes touches none of these files.
- `bad.*`: one end-to-end run of the CLI per format on the bundled mismatched pair (`--no-deep`).

Regenerate after an intended change with: DFLASH_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_reports.py
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.checker.findings import Finding, Location, RuleDocs, RuleRun, backend_counts
from dflash_compat.checker.report import Report, judged_engines, summarize
from dflash_compat.cli.app import cli
from dflash_compat.emitters import FORMATS, get_renderer
from dflash_compat.engines.registry import EngineInfo, default_versions, select_versions
from dflash_compat.engines.store import EngineSource

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
BAD = ("examples/llama-with-qwen3-draft/target", "examples/llama-with-qwen3-draft/draft")
EXT = {"text": "txt", "json": "json", "sarif": "sarif.json", "junit": "junit.xml", "github": "github.txt",
       "markdown": "md"}
BACKENDS = ["transformers", "vllm", "mlx"]


# Hand-written citations (the real rules' own are pinned by tests/test_rule_provenance.py).
_SOURCES = {
    "DF101": (EngineSource("dflash", "dflash/model.py", "554-571", "fc built from hidden_size"),),
    "DF303": (EngineSource("vllm", "vllm/config/speculative.py", "1614", "K checked against the block"),
              EngineSource("speculators", "speculators/models/dflash/config.py", "40-42", "block_size default")),
}


def _docs(code: str) -> RuleDocs:
    return RuleDocs(what=f"What {code} checks.", why=f"Why {code} matters.", example=f"An example for {code}.",
                    fix=f"How to fix {code}.", sources=_SOURCES.get(code, ()))


def _run(code: str, name: str, severity: str, backends: tuple[str, ...], status: str = "ran", **why) -> RuleRun:
    return RuleRun(code=code, name=name, severity=severity, backends=backends, status=status, docs=_docs(code), **why)


def hand_built_report(strict: bool = False) -> Report:
    """A report with every severity, common and per-backend findings, every kind of location, and rules that
    ran, were skipped and did not apply."""
    findings = [
        Finding("DF101", "hidden-size-mismatch", "error", "common", "draft hidden_size 2560 != target 4096",
                "Use a draft trained for this target.",
                [Location("draft", "config.json", "hidden_size"), Location("target", "config.json", "hidden_size")]),
        Finding("DF701", "target-embedding-not-found", "error", "common", "no input embedding in Model",
                "Wrap the target with an adapter.", [Location("target", "<module tree>", "")]),
        Finding("DF303", "vllm-speculative-tokens", "error", "vllm", "num_speculative_tokens 16 > block_size - 1",
                "Use 15.", [], judged_for={"vllm": "0.34.0", "speculators": "0.9.0"}),
        Finding("DF108", "num-target-layers-mismatch", "warning", "common", "draft num_target_layers 36 != 32",
                "Use the draft for this target.", [Location("draft", "config.json", "num_target_layers")]),
        Finding("DF602", "draft-layer-count-mismatch", "warning", "mlx", "weights hold 4 layers, the config 5",
                "Download it again.", [Location("draft", "model.safetensors", "layers.4.*")]),
        Finding("DF113", "mask-token-is-special-token", "info", "transformers",
                "mask_token_id 151645 is an EOS id: with | and , and % in it",
                "Pick another id.", [Location("target", "generation_config.json", "eos_token_id")]),
    ]
    runs = [
        _run("DF101", "hidden-size-mismatch", "error", ("common",)),
        _run("DF108", "num-target-layers-mismatch", "warning", ("common",)),
        _run("DF113", "mask-token-is-special-token", "warning", ("transformers",)),
        _run("DF251", "forward-signature-incomplete", "error", ("transformers",), "skipped", missing="torch-modules",
             reason="the target's modules were inspected with mlx-lm, not transformers"),
        _run("DF303", "vllm-speculative-tokens", "error", ("vllm",)),
        _run("DF401", "sglang-num-draft-tokens", "error", ("sglang",), "not-applicable", reason="no selected backend"),
        _run("DF602", "draft-layer-count-mismatch", "warning", ("mlx",)),
        _run("DF607", "draft-weights-fp16", "warning", ("common",), "skipped", missing="weights",
             reason="the draft's weight headers were not read (no-safetensors)"),
        _run("DF701", "target-embedding-not-found", "error", ("common",)),
    ]
    counts = {b: backend_counts(findings, runs, b) for b in BACKENDS}
    return Report(
        target={"source": "org/target", "model_type": "qwen3", "num_hidden_layers": 32, "hidden_size": 4096,
                "vocab_size": 151936},
        draft={"source": "./draft", "format": "zlab-v1", "block_size": 16, "target_layer_ids": [1, 9, 17],
               "mask_token_id": 151645, "weights": None},
        backends=BACKENDS, findings=findings, summary=summarize(findings, counts), strict=strict, rules=runs,
        engines=judged_engines(runs, BACKENDS, select_versions(option=("vllm==0.34.0", "transformers==5.25.0",
                                                                       "speculators==0.9.0", "dflash==0.1.0",
                                                                       "mlx-lm==0.32.2"), installed=False)),
    )


@pytest.fixture(autouse=True)
def _nothing_installed(monkeypatch):
    """The end-to-end runs judge at the newest bundled releases whatever this environment has installed."""
    monkeypatch.setattr(EngineInfo, "installed_version", lambda self: None)


def _check_golden(path: Path, text: str) -> None:
    if os.environ.get("DFLASH_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed; see the module docstring to regenerate"


@pytest.mark.parametrize("fmt", sorted(EXT))
def test_each_format_renders_the_hand_built_report(fmt):
    _check_golden(GOLDEN / f"report.{EXT[fmt]}", get_renderer(fmt)(hand_built_report()))


@pytest.mark.parametrize("fmt", sorted(EXT))
def test_cli_end_to_end(fmt, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")  # the text format's width when stdout is not a terminal
    res = CliRunner().invoke(cli, [BAD[0], "--draft", BAD[1], "--no-deep", "-f", fmt], catch_exceptions=False)
    assert res.exit_code == 1
    _check_golden(GOLDEN / f"bad.{EXT[fmt]}", res.output)


@pytest.mark.parametrize("width", [80, 120])
def test_text_at_80_and_120_columns(width, monkeypatch):
    """The text report at a CI log's width and a wide terminal's: both goldens, no line past the width
    (the hand-built report's keys and paths are all shorter than a line), no ANSI in a pipe."""
    suffix = "txt" if width == 80 else f"{width}.txt"  # 80 columns: the goldens above
    text = get_renderer("text")(hand_built_report(), width=width)
    _check_golden(GOLDEN / f"report.{suffix}", text)
    assert max(len(line) for line in text.splitlines()) <= width and "\x1b" not in text
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(width))
    res = CliRunner().invoke(cli, [BAD[0], "--draft", BAD[1], "--no-deep"], catch_exceptions=False)
    _check_golden(GOLDEN / f"bad.{suffix}", res.output)
    assert max(len(line) for line in res.output.splitlines()) <= width and "\x1b" not in res.output


def test_every_format_has_goldens():
    assert set(EXT) == set(FORMATS)


def test_json_report_shape():
    """The top-level keys and finding keys the issue fixes, independent of which rules fire."""
    report = json.loads((GOLDEN / "bad.json").read_text())
    assert list(report) == ["schema_version", "tool", "engines", "target", "draft", "backends", "findings",
                            "summary", "strict", "rules"]
    assert report["schema_version"] == 1 and report["tool"]["name"] == "dflash-check"
    # the releases the verdicts rest on: every backend is selected, and their rules cite every engine
    speaking = ["vllm", "sglang", "dflash", "mlx-lm", "transformers", "speculators", "llama.cpp"]
    assert report["engines"] == default_versions().as_json(speaking)
    assert all(e["origin"] == "default" for e in report["engines"].values())
    for key in ("source", "model_type", "architectures", "hidden_size", "num_hidden_layers", "vocab_size"):
        assert key in report["target"]
    for key in ("source", "format", "hidden_size", "block_size", "target_layer_ids", "mask_token_id"):
        assert key in report["draft"]
    assert report["backends"] == ["transformers", "dflash", "vllm", "sglang", "mlx", "llama.cpp"]
    assert report["findings"], "the bad example must produce findings"
    for f in report["findings"]:
        assert list(f) == ["code", "name", "severity", "backend", "message", "fix", "locations", "judged_for"]
        assert f["severity"] in ("error", "warning", "info")
        for loc in f["locations"]:
            assert list(loc) == ["artifact", "file", "key"] and loc["artifact"] in ("target", "draft")
    assert list(report["summary"]) == ["errors", "warnings", "infos", "verdict", "per_backend"]
    order = {"error": 0, "warning": 1, "info": 2}
    keys = [(order[f["severity"]], f["code"], f["backend"]) for f in report["findings"]]
    assert keys == sorted(keys), "findings are sorted"
    for run in report["rules"]:
        assert list(run) == ["code", "name", "severity", "backends", "status", "missing", "reason"]
