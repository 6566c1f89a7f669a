"""`dflash-check launch` on files shaped like public deployment files (tests/data/launch/wild, their public
sources in tests/data/launch/README.md): every launch and every finding on its exact FILE:LINE:COLUMN, in
the text output and in SARIF, and each position checked against the file itself (the text written there
starts with the token the finding is about). Stdin, Helm templates and multi-file runs with a file that
cannot be read."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

REPO = Path(__file__).resolve().parent.parent
WILD = Path("tests/data/launch/wild")

# file -> (launches: (line, column, engine, token at the launch), findings: (code, line, column, token there))
# (DF910 "pair not checked: --no-pair" is left out: the runs here never read the Hub-named models)
EXPECTED = {
    "k8s/disagg-prefill.yaml": (
        [(43, 20, "vllm", "vllm serve Qwen/Qwen3-8B"), (86, 15, "vllm", "vllm serve Qwen/Qwen3-8B --port 8200")],
        [("DF912", 45, 38, '\'{"method": "DFlash"'), ("DF908", 86, 15, "vllm serve")]),
    "k8s/kserve-folded.yaml": (
        [(17, 11, "vllm", "python3 -m vllm.entrypoints.openai.api_server")],
        [("DF903", 20, 32, '\'{"method": "dflash"')]),
    "compose/sglang-multiline.yaml": (
        [(13, 17, "sglang", "python3 -m sglang.launch_server")],
        [("DF912", 18, 31, "dflash2")]),
    "compose/merge-keys.yaml": (
        [(9, 7, "vllm", "Qwen/Qwen3-8B"), (9, 7, "vllm", "Qwen/Qwen3-8B"), (31, 14, "vllm", "vllm serve")],
        [("DF908", 31, 14, "vllm serve")]),
    "skypilot/vllm-serve.yaml": (
        [(21, 3, "vllm", "vllm serve $MODEL_NAME")],
        [("DF909", 22, 28, "$SKYPILOT_NUM_GPUS_PER_NODE"), ("DF913", 16, 15, "vllm==0.19.1")]),
    "skypilot/sglang-docker.yaml": (
        [(14, 3, "sglang", "sglang serve $MODEL")],
        [("DF909", 15, 10, "$SKYPILOT_NUM_GPUS_PER_NODE")]),
    "shell/llama-server-dflash.sh": (
        [(27, 6, "llama.cpp", "llama-server -m")],
        [("DF912", 28, 15, "dflash -sm"), ("DF905", 28, 26, "tensor")]),
    "docker/llama-server.Dockerfile": (
        [(16, 24, "llama.cpp", "/app/llama-server -m")],
        [("DF904", 17, 31, "q8_0 -ctvd"), ("DF904", 17, 42, "q8_0\"]")]),
    "workflow/serve-smoke.yml": (
        [(24, 11, "sglang", "sglang serve \"$MODEL\"")],
        [("DF909", 26, 44, "${{ matrix.tokens }}")]),
}
# the engine version each launch is judged at, where the file says it (image or pin)
VERSIONS = {
    "compose/merge-keys.yaml": ["0.33.0", "0.34.0", "0.33.0"],  # vllm-b overrides the inherited image
    "skypilot/vllm-serve.yaml": ["0.19.1"],
    "skypilot/sglang-docker.yaml": ["0.5.23"],
    "docker/llama-server.Dockerfile": ["b11434"],
}


@pytest.fixture(autouse=True)
def _repo(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["launch", "--no-config", "--no-deep", *args], input=input)


def _at(path: Path, line: int, column: int) -> str:
    return path.read_text(encoding="utf-8").split("\n")[line - 1][column - 1:]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_position_is_where_the_file_says(name):
    """The table itself is checked against the files: each position holds the token it names."""
    launches, findings = EXPECTED[name]
    for line, column, _, token in launches:
        assert _at(WILD / name, line, column).startswith(token), (name, line, column)
    for code, line, column, token in findings:
        assert _at(WILD / name, line, column).startswith(token), (name, code, line, column)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_launch_and_finding_in_json_text_and_sarif(name):
    path = str(WILD / name)
    launches, findings = EXPECTED[name]
    doc = json.loads(_run("--no-pair", "-f", "json", path).stdout)
    assert [(x["line"], x["column"], x["engine"]) for x in doc["launches"]] == [(a, b, c) for a, b, c, _ in launches]
    got = sorted((f["code"], f["locations"][0]["line"], f["locations"][0]["column"])
                 for x in doc["launches"] for f in x["report"]["findings"] if f["code"] != "DF910")
    assert got == sorted((c, a, b) for c, a, b, _ in findings), name
    if name in VERSIONS:
        assert [x["engine_version"]["version"] for x in doc["launches"]] == VERSIONS[name]
    text = _run("--no-pair", path).stdout
    for line, column, _engine, _ in launches:
        assert f"{path}:{line}:{column}: " in text
    for code, line, column, _ in findings:
        assert any(ln.startswith(f"{path}:{line}:{column}: ") and f" {code}" in ln for ln in text.splitlines()), \
            (code, text)
    sarif = json.loads(_run("--no-pair", "-f", "sarif", path).stdout)
    regions = sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
                      r["locations"][0]["physicalLocation"]["region"]["startColumn"])
                     for r in sarif["runs"][0]["results"] if r["ruleId"] != "DF910")
    assert regions == sorted((c, a, b) for c, a, b, _ in findings)
    for r in sarif["runs"][0]["results"]:
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(name)


def test_helm_rendered_on_stdin_is_a_file_named_stdin():
    """`helm template RELEASE CHART | dflash-check launch -`: standard input is read as one file, <stdin>,
    its kind recognised from its content, and `# Source:` names the template each object came from."""
    rendered = (WILD / "helm/rendered.yaml").read_text()
    res = _run("--no-pair", "-f", "json", "-", input=rendered)
    doc = json.loads(res.stdout)
    [launch] = doc["launches"]
    assert (launch["file"], launch["line"], launch["column"], launch["engine"]) == ("<stdin>", 23, 15, "vllm")
    assert launch["context"] == "Deployment/demo-qwen3 (dflash-serve/templates/deployment.yaml) container vllm"
    [df902] = [f for f in launch["report"]["findings"] if f["code"] == "DF902"]
    assert (df902["locations"][0]["line"], df902["locations"][0]["column"]) == (27, 16)
    assert doc["files"] == [{"file": "<stdin>", "kind": "kubernetes", "launches": 1}] and res.exit_code == 1


def test_a_helm_template_is_one_error_line_that_says_how_to_render_it():
    path = WILD / "helm/chart/templates/deployment.yaml"
    res = _run(str(path))
    assert res.exit_code == 2
    [line] = res.output.strip().splitlines()
    assert line == (f"dflash-check: error: {path}:1: a Helm chart template, not a manifest (its values exist only "
                    "once the chart is rendered): check what it renders, with the values you deploy (-f "
                    f"values.yaml): helm template demo {WILD / 'helm/chart'} | dflash-check launch -")


def test_a_bad_file_in_a_multi_file_run_is_a_result_of_its_own(tmp_path):
    """An invalid YAML file and a Helm template among good files: each is a per-file result in every format,
    the good files are judged, the exit code is the worst (2)."""
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  a:\n    command: [oops\n")
    helm = WILD / "helm/chart/templates/deployment.yaml"
    good = WILD / "k8s/kserve-folded.yaml"
    files = [str(good), str(bad), str(helm)]
    text = _run("--no-pair", *files)
    assert text.exit_code == 2
    flat = text.stdout.replace("\n    ", " ")  # the 80-column wrapping undone
    assert f"dflash-check: error: {bad}:4: not valid YAML" in flat and f"{helm}:1: a Helm chart template" in flat
    assert f"{good}:20:32: error DF903" in flat
    assert "1 launch in 3 files: 1 error, 0 warnings, 1 info; 2 files not read" in text.stdout
    doc = json.loads(_run("--no-pair", "-f", "json", *files).stdout)
    assert doc["exit_code"] == 2 and [f.get("error", {}).get("line") for f in doc["files"]] == [None, 4, 1]
    assert len(doc["launches"]) == 1
    sarif = json.loads(_run("--no-pair", "-f", "sarif", *files).stdout)
    from tests.test_output_injection import SARIF

    SARIF.validate(sarif)
    [inv] = sarif["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    notes = inv["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["region"]["startLine"] for n in notes] == [4, 1]
    assert [r["ruleId"] for r in sarif["runs"][0]["results"] if r["ruleId"] != "DF910"] == ["DF903"]
    github = _run("--no-pair", "-f", "github", *files).stdout
    assert f"::error file={bad},line=4,title=file not read::not valid YAML" in github
    assert f"::error file={good},line=20,col=32,title=DF903" in github
    root = ET.fromstring(_run("--no-pair", "-f", "junit", *files).stdout)
    assert root.get("errors") == "2" and root.get("failures") == "1"
    md = _run("--no-pair", "-f", "markdown", *files).stdout
    assert f"`{bad}:4`: **error**: not valid YAML" in md and "| error | DF903" in md
    # every file unreadable: only the errors, one line each, exit 2
    res = _run(str(bad), str(helm))
    assert res.exit_code == 2 and [ln.split(": ")[2] for ln in res.output.strip().splitlines()] == [
        f"{bad}:4", f"{helm}:1"]


def test_an_offline_pair_that_cannot_be_read_fails_under_strict():
    """A DFlash launch whose models are not here (HF_HUB_OFFLINE, no cache) is not judged: a warning that
    says how to judge it offline, so `--strict` fails the file; without --strict it passes."""
    line = ("vllm serve Qwen/Qwen3-8B --speculative-config "
            "'{\"method\": \"dflash\", \"model\": \"z-lab/Qwen3-8B-DFlash-b16\", \"num_speculative_tokens\": 15}'")
    res = _run("-f", "json", "-c", line)
    [f] = [f for f in json.loads(res.stdout)["launches"][0]["report"]["findings"] if f["code"] == "DF910"]
    assert f["severity"] == "warning" and f["message"].startswith("the pair was not judged: target Qwen/Qwen3-8B")
    assert "HF_HUB_OFFLINE=1" in f["fix"] and "local folders" in f["fix"]
    assert res.exit_code == 0 and _run("--strict", "-c", line).exit_code == 1
    # a launch without a draft has no pair: no DF910 at all
    doc = json.loads(_run("-f", "json", "-c", "vllm serve Qwen/Qwen3-8B --port 8000").stdout)
    assert doc["launches"][0]["report"]["findings"] == []
