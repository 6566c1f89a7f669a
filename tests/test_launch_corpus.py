"""`dflash-check launch` on the corpus in tests/data/launch: each file reproduces a DFlash deployment failure
as users wrote it and must get its finding on the right line and column; its `-fixed` twin must pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path("tests/data/launch")

# file -> (code, line, column) findings it must have (the pair check runs where the launch names the
# fixture pair; the Hub-named ones are judged with --no-pair)
EXPECTED = {
    "shell/llama-q8-draft-cache.sh": [("DF904", 14, 9), ("DF904", 14, 20)],
    "shell/llama-zero-draft.sh": [("DF903", 5, 24)],
    "shell/vllm-env-tp.sh": [("DF909", 6, 28)],
    "docker/llama-removed-draft-max.Dockerfile": [("DF901", 11, 6)],
    "compose/llama-sm-tensor.yaml": [("DF905", 21, 9)],
    "compose/vllm-twice.yaml": [("DF908", 11, 7)],
    "compose/sglang-dp-attention.yaml": [("DF410", 10, 31)],
    "k8s/llama-p-min.yaml": [("DF907", 27, 16)],
    "k8s/vllm-dspark-as-dflash.yaml": [("DF906", 21, 16)],
    "workflow/vllm-034-keys.yml": [("DF902", 17, 34)],
    "workflow/sglang-window.yml": [("DF413", 15, 43)],
}
# the files whose launch names the fixture pair: checked with the pair; the rest name Hub models and are
# checked with --no-pair (no test reaches the Hub)
WITH_PAIR = {"compose/sglang-dp-attention.yaml", "workflow/sglang-window.yml"}
# the findings a file may have besides the expected ones: the pair could not be read (Hub ids offline)
BENIGN = {"DF910"}


def _run(*args: str):
    return CliRunner().invoke(cli, ["launch", "--no-config", "--no-deep", "--format", "json", *args])


@pytest.fixture(autouse=True)
def _repo(monkeypatch):
    monkeypatch.chdir(REPO)  # the corpus names the fixture pair relative to the repository


def _findings(doc: dict) -> list[tuple[str, int, int]]:
    out = []
    for launch in doc["launches"]:
        for f in launch["report"]["findings"]:
            loc = f["locations"][0]
            out.append((f["code"], loc.get("line"), loc.get("column")))
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_failure_is_found_on_its_line(name):
    result = _run(*([] if name in WITH_PAIR else ["--no-pair"]), str(CORPUS / name))
    doc = json.loads(result.output)
    found = _findings(doc)
    for expected in EXPECTED[name]:
        assert expected in found, (name, found)
    unexpected = [f for f in found if f[0] not in BENIGN and f not in EXPECTED[name]]
    assert unexpected == [], (name, unexpected)
    errors = any(f["severity"] == "error" for launch in doc["launches"] for f in launch["report"]["findings"])
    assert result.exit_code == (1 if errors else 0), result.output
    for launch in doc["launches"]:
        assert launch["file"] == str(CORPUS / name) and launch["line"] >= 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_fixed_twin_passes_strictly(name):
    path = CORPUS / name
    twin = path.with_name(path.stem + "-fixed" + path.suffix)
    assert twin.is_file(), twin
    result = _run("--strict", *([] if name in WITH_PAIR else ["--no-pair"]), str(twin))
    doc = json.loads(result.output)
    assert doc["launches"], twin
    left = [f for f in _findings(doc) if f[0] not in BENIGN]
    assert left == [] and result.exit_code == 0, (twin, left, result.output)


def test_engine_versions_come_from_the_file():
    doc = json.loads(_run("--no-pair", *(str(CORPUS / n) for n in sorted(EXPECTED))).output)
    versions = {(launch["file"].split("/", 3)[-1], launch["engine"]): launch["engine_version"]
                for launch in doc["launches"]}
    assert versions[("compose/vllm-twice.yaml", "vllm")]["version"] == "0.34.0"
    assert versions[("compose/vllm-twice.yaml", "vllm")]["origin"] == "launch-file"
    assert versions[("k8s/vllm-dspark-as-dflash.yaml", "vllm")]["version"] == "0.33.0"
    assert versions[("compose/sglang-dp-attention.yaml", "sglang")]["version"] == "0.5.23"
    assert versions[("docker/llama-removed-draft-max.Dockerfile", "llama.cpp")]["version"] == "b11434"
    pinned = versions[("workflow/vllm-034-keys.yml", "vllm")]
    assert pinned["version"] == "0.34.0" and "pip pin on line 13" in pinned["detail"]
    assert versions[("shell/vllm-env-tp.sh", "vllm")]["detail"] == "pip pin on line 3"


def test_the_option_overrides_the_pinned_version():
    doc = json.loads(_run("--no-pair", "--engine-version", "vllm==0.33.0", str(CORPUS / "workflow/vllm-034-keys.yml"))
                     .output)
    launch = doc["launches"][0]
    assert launch["engine_version"] == {"version": "0.33.0", "origin": "option", "detail": "--engine-version"}
    assert "DF902" not in [f["code"] for f in launch["report"]["findings"]]  # 0.33 still knows the key


def test_a_vllm_0_32_launch_is_judged_by_its_own_parser(tmp_path):
    """`launch --engine-version vllm==0.32.0`: the flags are judged (no DF911) against 0.32.0's parser, which
    has no `--monokernel` (declared from 0.33.0 on: vllm/engine/arg_utils.py:1842)."""
    script = tmp_path / "run.sh"
    script.write_text("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"dflash\", \"model\": "
                      "\"z-lab/Qwen3-8B-DFlash-b16\", \"num_speculative_tokens\": 15}' --headless --monokernel\n")
    res = _run("--no-pair", "--engine-version", "vllm==0.32.0", str(script))
    launch = json.loads(res.output)["launches"][0]
    assert launch["engine_version"] == {"version": "0.32.0", "origin": "option", "detail": "--engine-version"}
    found = [(f["code"], f["message"]) for f in launch["report"]["findings"] if f["code"].startswith("DF9")]
    codes = [c for c, _ in found]
    assert "DF911" not in codes and codes.count("DF901") == 1, found
    assert "--monokernel" in dict(found)["DF901"] and res.exit_code == 1
