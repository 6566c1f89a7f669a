"""lmdeploy launches in every launch-file kind (shell, Dockerfile with an openmmlab/lmdeploy image, compose,
Kubernetes, GitHub workflow), judged at the image tag's release: its flags against lmdeploy's own parser, the
TurboMind default (DF479), its deployment options (DF470-DF475) and, with local models, the pair (DF453)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from dflash_compat.launch.parse import _BOOL, find_launch, image_engine, image_version
from dflash_compat.launch.sources import candidates, pins_in
from dflash_compat.pipeline.launch import LaunchSettings, check_text
from tests.configs import draft, target

CMD = ("lmdeploy serve api_server Qwen/Qwen3-8B --speculative-algorithm dflash "
       "--speculative-draft-model z-lab/Qwen3-8B-DFlash-b16 --speculative-num-draft-tokens 15")
WHEEL = Path("/work/wheels/src/lmdeploy-0.18.0")


def judged(file: str, text: str, **settings):
    fr = check_text(file, text, LaunchSettings(pair=settings.pop("pair", False), **settings))
    return fr


def codes(fr) -> list[str]:
    return [f.code for lr in fr.launches for f in lr.report.findings if f.code != "DF910"]


FILES = {
    "run.sh": f"#!/bin/sh\n{CMD} --tp 2\n",
    "Dockerfile": f"FROM openmmlab/lmdeploy:v0.18.0-cu12\nCMD {CMD}\n",
    "compose.yaml": f"services:\n  lmd:\n    image: openmmlab/lmdeploy:v0.18.0-cu12\n    command: {CMD}\n",
    "deploy.yaml": ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: lmd}\nspec:\n  template:\n    spec:\n"
                    "      containers:\n        - name: lmd\n          image: openmmlab/lmdeploy:v0.18.0-cu12\n"
                    f"          command: [\"sh\", \"-c\", \"{CMD}\"]\n"),
    ".github/workflows/serve.yml": ("on: push\njobs:\n  serve:\n    runs-on: ubuntu-latest\n    steps:\n"
                                    f"      - run: pip install lmdeploy==0.18.0\n      - run: {CMD}\n"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_file_kind_finds_the_launch_and_reports_turbomind(name):
    fr = judged(name, FILES[name])
    [lr] = fr.launches
    assert lr.launch.engine == "lmdeploy" and lr.launch.target == "Qwen/Qwen3-8B"
    assert lr.launch.draft == "z-lab/Qwen3-8B-DFlash-b16" and lr.launch.settings["num_draft_tokens"] == 15
    assert lr.version.version == "0.18.0" and lr.version.origin in ("launch-file", "default")
    if name != "run.sh":  # the image tag or the pip pin names the release
        assert lr.version.origin == "launch-file", lr.version
    found = [f for f in lr.report.findings if f.code == "DF479"]
    assert found and "runs without DFlash" in found[0].message and found[0].fix == "Add --backend pytorch to the launch."
    assert found[0].locations[0].line == FILES[name].splitlines().index(
        next(x for x in FILES[name].splitlines() if "--speculative-algorithm" in x)) + 1


def test_backend_pytorch_passes_and_other_algorithms_are_not_dflash():
    assert codes(judged("run.sh", CMD + " --backend pytorch")) == []
    assert "DF479" not in codes(judged("run.sh", CMD.replace("dflash", "eagle3")))
    assert "DF479" in codes(judged("run.sh", CMD + " --backend turbomind"))


def test_unknown_flags_and_deployment_options_are_judged_at_the_release():
    fr = judged("run.sh", CMD + " --backend pytorch --speculative-model x --tp 2 --dp 2")
    assert "DF901" in codes(fr)
    lr = fr.launches[0]
    assert lr.launch.settings["tp"] == 2 and lr.launch.settings["dp"] == 2


def test_image_and_pins_name_the_release():
    assert image_engine("openmmlab/lmdeploy:v0.18.0-cu12") == "lmdeploy"
    assert image_version("openmmlab/lmdeploy:v0.18.0-cu12") == "0.18.0"
    assert image_version("docker.io/openmmlab/lmdeploy:latest") is None
    pin = pins_in("pip install 'lmdeploy==0.17.0'\n")["lmdeploy"]
    assert (pin.version, pin.line) == ("0.17.0", 1)
    fr = judged("Dockerfile", f"FROM openmmlab/lmdeploy:v0.17.0-cu12\nCMD {CMD} --backend pytorch\n")
    lr = fr.launches[0]
    assert lr.version.version == "0.17.0"
    assert "DF913" in codes(fr)  # 0.17.0 predates lmdeploy's first DFlash release (0.18.0): an error from the pin


def test_python_module_entry_point():
    _, cands = candidates("run.sh", "python -m lmdeploy serve api_server M --backend pytorch\n")
    launch = find_launch(cands[0])
    assert launch.engine == "lmdeploy" and launch.target == "M" and launch.settings["backend"] == "pytorch"
    _, cands = candidates("run.sh", "lmdeploy chat M\nlmdeploy serve gradio M\n")
    assert [find_launch(c) for c in cands] == [None, None]


def test_the_pair_is_checked_with_local_models_and_the_launch_options(tmp_path):
    t, d = tmp_path / "t", tmp_path / "d"
    for folder, cfg in ((t, target()), (d, draft())):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
    text = (f"lmdeploy serve api_server {t} --backend pytorch --speculative-algorithm dflash "
            f"--speculative-draft-model {d} --speculative-num-draft-tokens 15 --enable-prefix-caching "
            "--quant-policy int8 --dp 2\n")
    fr = judged("run.sh", text, pair=True)
    found = {f.code: f for lr in fr.launches for f in lr.report.findings}
    assert {"DF453", "DF470", "DF472", "DF473"} <= set(found), sorted(found)
    assert found["DF472"].locations[0].key == "prefix_caching" and found["DF473"].locations[0].line == 1


@pytest.mark.skipif(not WHEEL.is_dir(), reason=f"{WHEEL} is not unpacked")
def test_the_value_less_flags_are_lmdeploy_s_store_true_flags():
    from dflash_compat.enginefacts.launch_flags import lmdeploy_flags
    from dflash_compat.enginefacts.source import SourceTree

    tree = SourceTree.open(WHEEL)
    flags = lmdeploy_flags(tree)["flags"]
    store_true = set()
    for path in ("lmdeploy/cli/utils.py", "lmdeploy/cli/serve.py"):
        for node in ast.walk(tree.parse(path)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                action = {k.arg: k.value for k in node.keywords}.get("action")
                if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
                    store_true |= {a.value for a in node.args if isinstance(a, ast.Constant) and a.value in flags}
    assert store_true and store_true <= _BOOL, sorted(store_true - _BOOL)


def test_check_launch_judges_the_turbomind_default_with_the_pair(tmp_path):
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    t, d = tmp_path / "t", tmp_path / "d"
    for folder, cfg in ((t, target()), (d, draft(**{"dflash_config.block_size": 16}))):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
    cmd = f"lmdeploy serve api_server {t} --speculative-algorithm dflash --speculative-draft-model {d}"
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--launch", cmd, "--no-deep", "-f", "json"])
    codes_found = {f["code"] for f in json.loads(res.output)["findings"] if f["severity"] == "error"}
    assert res.exit_code == 1 and codes_found == {"DF478"}, res.output[-1500:]
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--launch", cmd + " --backend pytorch", "--no-deep"])
    assert res.exit_code == 0, res.output
