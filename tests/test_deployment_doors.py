"""One deployment, every door (issue #31): check's own options, `check --launch`, `serve`'s printed command,
`launch -c` and a launch file of each kind (shell script, Dockerfile, compose, Kubernetes, workflow) give the
same codes and severities, for every pair rule that reads a deployment option (`Rule.reads`) and every launch
rule. The pair is the bundled Qwen3-8B config pair (block size 16), judged from its configs (--no-deep)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
T, D = str(ROOT / "examples/qwen3-8b/target"), str(ROOT / "examples/qwen3-8b/draft")
VERSIONS = ["vllm==0.34.0", "sglang==0.5.23", "llama.cpp==b11434"]
BACKEND = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp"}


def vllm(spec: dict, extra: str = "") -> str:
    return f"vllm serve {T} --speculative-config '{json.dumps({'method': 'dflash', 'model': D, **spec})}' {extra}"


def sglang(extra: str) -> str:
    return (f"python -m sglang.launch_server --model-path {T} --speculative-algorithm DFLASH "
            f"--speculative-draft-model-path {D} {extra}")


LLAMA = "llama-server -m t.gguf -md d.gguf --spec-type draft-dflash --spec-draft-p-min 0.75 {extra}"

# (id, engine, launch command, check's own options (None: not expressible), serve's options (None: not printable))
SCENARIOS = [
    ("vllm-good", "vllm", vllm({"num_speculative_tokens": 15}, "--max-num-seqs 64 --max-num-batched-tokens 2048"),
     ["--num-speculative-tokens", "15", "--max-num-seqs", "64", "--max-num-batched-tokens", "2048"],
     ["--num-speculative-tokens", "15", "--max-num-seqs", "64", "--max-num-batched-tokens", "2048"]),
    ("vllm-k-too-large", "vllm", vllm({"num_speculative_tokens": 20}, "--max-num-seqs 8 --max-num-batched-tokens 2048"),
     ["--num-speculative-tokens", "20", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048"],
     ["--num-speculative-tokens", "20", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048"]),
    ("vllm-budget", "vllm", vllm({"num_speculative_tokens": 15}, "--max-num-seqs 256 --max-num-batched-tokens 1024"),
     ["--num-speculative-tokens", "15", "--max-num-seqs", "256", "--max-num-batched-tokens", "1024"],
     ["--num-speculative-tokens", "15", "--max-num-seqs", "256", "--max-num-batched-tokens", "1024"]),
    ("vllm-draft-tp", "vllm", vllm({"num_speculative_tokens": 15, "draft_tensor_parallel_size": 3},
                                   "--tensor-parallel-size 2 --max-num-seqs 8 --max-num-batched-tokens 2048"),
     ["--num-speculative-tokens", "15", "--tp", "2", "--draft-tp", "3", "--max-num-seqs", "8",
      "--max-num-batched-tokens", "2048"],
     ["--num-speculative-tokens", "15", "--tp", "2", "--draft-tp", "3", "--max-num-seqs", "8",
      "--max-num-batched-tokens", "2048"]),
    ("vllm-pp-good", "vllm", vllm({"num_speculative_tokens": 15}, "-pp 2 --max-num-seqs 8 --max-num-batched-tokens 2048"),
     ["--num-speculative-tokens", "15", "--pp-size", "2", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048"],
     None),
    # no K: vLLM stops at start-up; check's own options cannot say "absent" (they may leave out what the launch
    # passes), so that door gives an info where the whole command is an error
    ("vllm-no-k", "vllm", vllm({}, "--max-num-seqs 8 --max-num-batched-tokens 2048"), None, None),
    ("sglang-good", "sglang", sglang("--speculative-num-draft-tokens 16"),
     ["--num-draft-tokens", "16"], ["--num-draft-tokens", "16"]),
    ("sglang-draft-tokens", "sglang", sglang("--speculative-num-draft-tokens 12"),
     ["--num-draft-tokens", "12"], ["--num-draft-tokens", "12"]),
    ("sglang-block-flags", "sglang", sglang("--speculative-num-draft-tokens 16 --speculative-dflash-block-size 8"),
     ["--num-draft-tokens", "16", "--dflash-block-size", "8"], ["--num-draft-tokens", "16", "--dflash-block-size", "8"]),
    ("sglang-window", "sglang", sglang("--speculative-num-draft-tokens 16 --speculative-draft-window-size 8"),
     ["--num-draft-tokens", "16", "--draft-window-size", "8"], ["--num-draft-tokens", "16", "--draft-window-size", "8"]),
    ("sglang-dp-attention", "sglang", sglang("--speculative-num-draft-tokens 16 --attn-dp-size 2 --tp-size 2"),
     ["--num-draft-tokens", "16", "--attn-dp-size", "2", "--tp", "2"],
     ["--num-draft-tokens", "16", "--attn-dp-size", "2", "--tp", "2"]),
    ("sglang-pp", "sglang", sglang("--speculative-num-draft-tokens 16 --pp-size 2"),
     ["--num-draft-tokens", "16", "--pp-size", "2"], ["--num-draft-tokens", "16", "--pp-size", "2"]),
    ("sglang-quantized", "sglang", sglang("--speculative-num-draft-tokens 16 --quantization fp8"),
     ["--num-draft-tokens", "16", "--quantization", "fp8"], ["--num-draft-tokens", "16", "--quantization", "fp8"]),
    ("sglang-trtllm", "sglang", sglang("--speculative-num-draft-tokens 16 "
                                       "--speculative-draft-attention-backend trtllm_mha"),
     ["--num-draft-tokens", "16", "--draft-attention-backend", "trtllm_mha"], None),
    ("sglang-cp", "sglang", sglang("--speculative-num-draft-tokens 16 --attn-dp-size 2 --enable-dp-lm-head "
                                   "--attn-cp-size 2 --tp-size 4"),
     ["--num-draft-tokens", "16", "--attn-dp-size", "2", "--enable-dp-lm-head", "--attn-cp-size", "2", "--tp", "4"],
     None),
]
LAUNCH_SCENARIOS = [  # launch rules only (the GGUF files do not exist: the pair is not read)
    ("llama-n-max", "llama.cpp", LLAMA.format(extra="--spec-draft-n-max 0")),
    ("llama-cache", "llama.cpp", LLAMA.format(extra="--spec-draft-n-max 15 -ctkd q8_0")),
    ("llama-split", "llama.cpp", LLAMA.format(extra="--spec-draft-n-max 15 -sm tensor")),
    ("llama-removed-flag", "llama.cpp", LLAMA.format(extra="--draft-max 15")),
    ("llama-p-min", "llama.cpp", LLAMA.format(extra="--spec-draft-n-max 15").replace("--spec-draft-p-min 0.75", "")),
    ("vllm-unknown-flag", "vllm", vllm({"num_speculative_tokens": 15}, "--speculative-model x")),
    ("vllm-bad-key", "vllm", vllm({"num_speculative_token": 15})),
    ("vllm-k-zero", "vllm", vllm({"num_speculative_tokens": 0})),
    ("vllm-var", "vllm", vllm({"num_speculative_tokens": 15}, "--tensor-parallel-size $TP")),
]


def _files(command: str) -> dict[str, str]:
    """The same launch written in each kind of launch file the reader knows."""
    quoted = json.dumps(command)
    return {
        "run.sh": f"#!/bin/sh\nset -e\n{command}\n",
        "Dockerfile": f"FROM ubuntu:24.04\nCMD {command}\n",
        "compose.yaml": f"services:\n  engine:\n    image: ubuntu:24.04\n    command: [\"sh\", \"-c\", {quoted}]\n",
        "deploy.yaml": ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: engine\nspec:\n  template:\n"
                        "    spec:\n      containers:\n        - name: engine\n          image: ubuntu:24.04\n"
                        f"          command: [\"sh\", \"-c\"]\n          args: [{quoted}]\n"),
        ".github/workflows/serve.yml": (f"on: push\njobs:\n  serve:\n    runs-on: ubuntu-latest\n    steps:\n"
                                        f"      - run: {quoted}\n"),
    }


def _codes(findings, backend: str) -> list[tuple[str, str]]:
    return sorted({(f["code"], f["severity"]) for f in findings if f["backend"] in (backend, "common")
                   and f["code"] != "DF910"})


def _invoke(args: list[str]) -> dict:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code in (0, 1), res.output[-3000:]
    return json.loads(res.output)


def _launch_findings(doc: dict) -> list[dict]:
    [launch] = doc["launches"]
    return launch["report"]["findings"]


def _through_launch(tmp_path: Path, command: str, backend: str, pair: bool = True) -> dict[str, list]:
    out = {}
    versions = [a for v in VERSIONS for a in ("--engine-version", v)]
    extra = [] if pair else ["--no-pair"]
    doc = _invoke(["launch", "--no-config", "--no-deep", *extra, *versions, "-f", "json", "-c", command])
    out["launch -c"] = _codes(_launch_findings(doc), backend)
    for name, text in _files(command).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        doc = _invoke(["launch", "--no-config", "--no-deep", *extra, *versions, "-f", "json", str(path)])
        out[name] = _codes(_launch_findings(doc), backend)
    return out


@pytest.mark.parametrize("name, engine, command, check_args, serve_args", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_one_deployment_gives_the_same_findings_at_every_door(tmp_path, name, engine, command, check_args,
                                                              serve_args):
    backend = BACKEND[engine]
    versions = [a for v in VERSIONS for a in ("--engine-version", v)]
    doors = _through_launch(tmp_path, command, backend)
    doc = _invoke(["check", T, "--draft", D, "--no-config", "--no-deep", "-b", backend, *versions, "-f", "json",
                   "--launch", command])
    doors["check --launch"] = _codes(doc["findings"], backend)
    pair_codes = {c for c, _ in doors["check --launch"] if c < "DF9"}
    if check_args is not None:
        doc = _invoke(["check", T, "--draft", D, "--no-config", "--no-deep", "-b", backend, *versions, "-f", "json",
                       *check_args])
        # check's own options judge the pair only (no launch line): its pair findings
        doors["check options"] = [x for x in _codes(doc["findings"], backend) if x[0] < "DF9"]
    if serve_args is not None:
        doc = _invoke(["serve", T, "--draft", D, "-e", engine, "--no-deep", *versions, "-f", "json", *serve_args])
        doors["serve"] = [x for x in _codes(doc["findings"], backend) if x[0] < "DF9"]
    launch_door = doors["launch -c"]
    for door, found in doors.items():
        want = launch_door if door not in ("check options", "serve") else [x for x in launch_door if x[0] < "DF9"]
        assert found == want, (name, door, found, want)
    # each scenario that is not the good twin shows the rule it is about
    assert pair_codes or name.endswith("good"), doors


@pytest.mark.parametrize("name, engine, command", LAUNCH_SCENARIOS, ids=[s[0] for s in LAUNCH_SCENARIOS])
def test_launch_rules_read_the_same_at_every_door(tmp_path, name, engine, command):
    backend = BACKEND[engine]
    doors = _through_launch(tmp_path, command, backend, pair=False)
    first = doors["launch -c"]
    assert first, (name, "the scenario shows no launch finding")
    assert all(found == first for found in doors.values()), doors


def test_no_k_is_an_error_for_a_whole_command_and_an_info_for_checks_own_options():
    versions = [a for v in VERSIONS for a in ("--engine-version", v)]
    doc = _invoke(["check", T, "--draft", D, "--no-config", "--no-deep", "-b", "vllm", *versions, "-f", "json",
                   "--launch", vllm({})])
    assert ("DF312", "error") in _codes(doc["findings"], "vllm")
    doc = _invoke(["check", T, "--draft", D, "--no-config", "--no-deep", "-b", "vllm", *versions, "-f", "json"])
    assert ("DF312", "info") in _codes(doc["findings"], "vllm")


def test_every_rule_that_reads_the_deployment_is_covered():
    """The scenarios above reach every pair rule whose `reads` names a vLLM / SGLang option."""
    reads = {r.code for r in ALL_RULES if r.reads and "launch" not in r.needs and set(r.backends) & {"vllm", "sglang"}}
    assert reads == {"DF303", "DF304", "DF307", "DF312", "DF315", "DF401", "DF405", "DF410", "DF411", "DF412",
                     "DF413", "DF414", "DF415", "DF418"}


def test_check_launch_refuses_mixed_doors_and_non_launches():
    res = CliRunner().invoke(cli, ["check", T, "--draft", D, "--no-config", "--no-deep", "--launch", vllm({}),
                                   "--num-speculative-tokens", "3"])
    assert res.exit_code == 2 and "--num-speculative-tokens" in res.output and res.output.count("\n") == 1
    res = CliRunner().invoke(cli, ["check", T, "--draft", D, "--no-config", "--launch", "echo hello"])
    assert res.exit_code == 2 and "launches no engine" in res.output and res.output.count("\n") == 1
    res = CliRunner().invoke(cli, ["check", T, "--draft", D, "--no-config", "-b", "sglang", "--launch",
                                   shlex.join(["vllm", "serve", T])])
    assert res.exit_code == 2 and "launches vllm" in res.output
