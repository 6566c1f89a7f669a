"""The CI gate, packaged: the README's CI example from a clean clone, the pre-commit hook manifest, and the
composite GitHub Action (its YAML, and every `run:` step run with bash against the bundled example)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "examples" / "qwen3-8b"
BAD = ROOT / "examples" / "llama-with-qwen3-draft"
BIN = Path(sys.executable).parent  # the venv whose dflash-check is under test


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_installed():
    """A non-editable install (pip install ./dflash-compat, git+URL, the action, pre-commit) ships
    exactly the listed packages: a folder missing here breaks it (dflash_compat.modelfacts once did)."""
    cfg = _pyproject()["tool"]["setuptools"]
    roots = {name: ROOT / folder for name, folder in cfg["package-dir"].items()}
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            found.add(".".join([name, *parts]))
    assert found == set(cfg["packages"])


# ---- the README's CI example ----------------------------------------------------------------


def _ci_section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("### As a CI gate", 1)[1].split("\n## ", 1)[0]


def _blocks(section: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


def test_readme_ci_install_is_pinned_and_from_the_repository():
    installs = [line for block in _blocks(_ci_section(), "bash") for line in block.splitlines()
                if line.startswith("pip install")]
    assert installs, "the CI example says how to install"
    for line in installs:
        assert line.split()[2:] != ["dflash-compat"], "no index serves dflash-compat"
        assert "@ git+" in line and re.search(r"@v?[0-9a-f.]+\"$", line) or line.split()[2].startswith("./"), line


def test_readme_ci_example_runs_from_a_clean_clone(tmp_path):
    """The settings the README shows are the bundled file, and its command passes in a fresh clone."""
    section = _ci_section()
    [toml] = _blocks(section, "toml")
    assert toml == (GOOD / "dflash-check.toml").read_text()
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--local", str(ROOT), str(clone)], check=True, timeout=120)
    runs = [line for block in _blocks(section, "bash") for line in block.splitlines() if line.startswith("cd ")]
    assert runs == ["cd examples/qwen3-8b && dflash-check    # the check these settings describe; exits 0"]
    folder, command = runs[0].split("#")[0].removeprefix("cd ").split(" && ")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", COLUMNS="80")
    res = subprocess.run(command.split(), cwd=clone / folder.strip(), capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(--strict: warnings fail)" in res.stdout and "vllm " in res.stdout


# ---- the pre-commit hook --------------------------------------------------------------------


def _hooks() -> list[dict]:
    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def test_hook_manifest_is_valid():
    hook = _hooks()[0]
    try:
        from pre_commit.clientlib import load_manifest
    except ImportError:  # pre-commit is in the dev extra; without it, the keys pre-commit requires
        assert {"id", "name", "entry", "language"} <= set(hook)
    else:
        hook = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))[0]
    assert hook["id"] == "dflash-check" and hook["language"] == "python" and hook["pass_filenames"] is False
    script = hook["entry"].split()[0]
    assert script in _pyproject()["project"]["scripts"], "the entry is the installed console script"
    files = re.compile(hook["files"])
    assert files.search("config.json") and files.search("sub/pyproject.toml") and not files.search("model.py")


@pytest.mark.parametrize(("target", "code"), [(GOOD / "target", 0), (BAD / "target", 1)])
def test_hook_entry_runs_with_the_repositorys_settings(tmp_path, target, code):
    """What pre-commit runs (the entry, no file names) in a model repository with a settings file."""
    hook = _hooks()[0]
    shutil.copytree(target, tmp_path / "target")
    shutil.copytree(GOOD / "draft", tmp_path / "draft")
    shutil.copy(GOOD / "dflash-check.toml", tmp_path)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    res = subprocess.run(hook["entry"].split(), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == code, res.stdout + res.stderr


@pytest.mark.skipif(not os.environ.get("DFLASH_PRECOMMIT_E2E"), reason="needs the package index; set DFLASH_PRECOMMIT_E2E=1")
def test_precommit_try_repo_on_a_clone(tmp_path):
    """pre-commit installs the hook from this repository (with pip) and runs it on a model repository."""
    pytest.importorskip("pre_commit")
    repo = tmp_path / "model"
    shutil.copytree(GOOD, repo)
    git = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "model"], cwd=repo, check=True)
    res = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "dflash-check", "--all-files"],
                         cwd=repo, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0 and "Passed" in res.stdout, res.stdout + res.stderr


# ---- the GitHub Action ----------------------------------------------------------------------


def _action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_action_yaml_is_a_composite_action():
    action = _action()
    assert {"name", "description", "runs"} <= set(action)
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert all("description" in spec for spec in inputs.values())
    text = (ROOT / "action.yml").read_text()
    for name in re.findall(r"\$\{\{\s*inputs\.([\w-]+)", text) + re.findall(r"inputs\.([\w-]+) ==", text):
        assert name in inputs, name
    ids = {step.get("id") for step in action["runs"]["steps"]}
    for output in action["outputs"].values():
        step = re.search(r"steps\.([\w-]+)\.outputs", output["value"])
        assert step is None or step.group(1) in ids
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], "inputs reach scripts through env, never pasted into the code"
        else:
            assert re.search(r"@v\d+$", step["uses"]), step["uses"]  # pinned to a release
    uses = [step["uses"] for step in action["runs"]["steps"] if "uses" in step]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)


def _step(name: str) -> dict:
    return next(step for step in _action()["runs"]["steps"] if step["name"] == name)


def _step_env(step: dict, inputs: dict[str, str]) -> dict[str, str]:
    """The step's env as the runner fills it: `${{ inputs.x }}` and `${{ github.action_path }}`."""
    defaults = {k: v.get("default", "") for k, v in _action()["inputs"].items()}
    values = {**defaults, **inputs}
    env = {}
    for key, expr in step.get("env", {}).items():
        name = re.fullmatch(r"\$\{\{\s*(inputs\.([\w-]+)|github\.action_path)\s*\}\}", expr)
        assert name, expr
        env[key] = str(ROOT) if name.group(1) == "github.action_path" else values[name.group(2)]
    return env


def _run_step(step: dict, inputs: dict[str, str], workspace: Path, tools: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
               GITHUB_OUTPUT=str(workspace / "github_output"), GITHUB_STEP_SUMMARY=str(workspace / "step_summary"),
               **_step_env(step, inputs))
    return subprocess.run(["bash", "-c", step["run"]], cwd=workspace, capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture
def workspace(tmp_path):
    """A model repository checked out (the bundled example with its settings), and `python` on PATH
    that records `python -m pip ...` instead of installing (the real interpreter otherwise)."""
    repo = tmp_path / "repo"
    shutil.copytree(GOOD, repo)
    tools = tmp_path / "tools"
    tools.mkdir()
    fake = tools / "python"
    fake.write_text(f'#!/bin/bash\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> "{tmp_path}/pip.log"; '
                    f'exit 0; fi\nexec "{sys.executable}" "$@"\n')
    fake.chmod(0o755)
    return repo, tools, tmp_path / "pip.log"


@pytest.mark.parametrize("deep", ["false", "true"])
def test_action_install_step(workspace, deep):
    repo, tools, log = workspace
    res = _run_step(_step("Install dflash-check"), {"deep": deep}, repo, tools)
    assert res.returncode == 0, res.stderr
    assert "dflash-check" in res.stdout  # --version ran
    calls = log.read_text().splitlines()
    if deep == "false":
        assert calls == [f"-m pip install --disable-pip-version-check {ROOT}"]
    else:
        assert len(calls) == 2 and all(f"-c {ROOT}/constraints.txt" in c for c in calls)
        assert "--index-url https://download.pytorch.org/whl/cpu torch" in calls[0]
        assert calls[1].endswith(f"{ROOT}[torch]")
    assert "torch==" in (ROOT / "constraints.txt").read_text()


def _condition(expr: str, inputs: dict[str, str], outputs: dict[str, str]) -> bool:
    """A step's `if:` as the runner reads the forms action.yml uses: `a == 'x'` joined by `&&`."""
    values = {f"inputs.{k}": v.get("default", "") for k, v in _action()["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()})
    values.update({f"steps.check.outputs.{k}": v for k, v in outputs.items()})
    terms = [re.fullmatch(r"\s*([\w.-]+) == '([^']*)'\s*", term) for term in expr.split("&&")]
    assert all(terms), expr
    return all(values.get(t.group(1), "") == t.group(2) for t in terms)


def _outputs(repo: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (repo / "github_output").read_text().splitlines())


def test_action_check_step_writes_sarif_and_the_exit_code(workspace):
    from tests.test_output_injection import SARIF

    repo, tools, _ = workspace
    res = _run_step(_step("Run dflash-check"), {"args": "--backend vllm --backend mlx"}, repo, tools)
    assert res.returncode == 0, res.stderr
    assert _outputs(repo)["exit-code"] == "0"
    sarif = json.loads((repo / "dflash-check.sarif").read_text())
    SARIF.validate(sarif)
    assert not _condition(_step("Fail on findings")["if"], {}, _outputs(repo))  # exit 0: the job passes
    assert _condition(_step("Upload SARIF")["if"], {}, _outputs(repo))
    summary = (repo / "step_summary").read_text()  # the job page's Markdown summary
    assert summary.startswith("### ") and "| backend | verdict |" in summary and "| vllm |" in summary


def test_action_step_summary_can_be_turned_off(workspace):
    repo, tools, _ = workspace
    res = _run_step(_step("Run dflash-check"), {"args": "--backend vllm", "step-summary": "false"}, repo, tools)
    assert res.returncode == 0, res.stderr
    assert not (repo / "step_summary").exists()


def test_action_fails_the_job_after_the_upload_on_findings(workspace):
    repo, tools, _ = workspace
    shutil.copytree(BAD / "target", repo / "llama")
    res = _run_step(_step("Run dflash-check"), {"target": "llama", "sarif-file": "out/report.sarif"}, repo, tools)
    assert res.returncode == 0, res.stderr  # the step passes so that the report is uploaded ...
    assert _outputs(repo)["exit-code"] == "1"
    results = json.loads((repo / "out" / "report.sarif").read_text())["runs"][0]["results"]
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in results for loc in r["locations"]
            if "physicalLocation" in loc}
    assert uris == {"llama/config.json", "draft/config.json"}  # relative to the checkout
    assert "does not fit" in (repo / "step_summary").read_text() and "DF104" in (repo / "step_summary").read_text()
    condition = _step("Fail on findings")["if"]
    assert _condition(condition, {}, _outputs(repo))
    assert not _condition(condition, {"fail-on-findings": "false"}, _outputs(repo))
    fail = _run_step(_step("Fail on findings"), {"sarif-file": "out/report.sarif"}, repo, tools)
    assert fail.returncode == 1 and "::error title=dflash-check::" in fail.stdout  # ... then the job fails


def test_action_check_step_fails_on_bad_input(workspace):
    repo, tools, _ = workspace
    res = _run_step(_step("Run dflash-check"), {"target": "missing-folder"}, repo, tools)
    assert res.returncode == 2 and _outputs(repo)["exit-code"] == "2"
    assert len(res.stderr.strip().splitlines()) == 1


def test_launch_hook_runs_on_the_files_pre_commit_passes(tmp_path):
    """The second hook: pre-commit passes the changed deployment files; a launch failure fails the commit."""
    hook = next(h for h in _hooks() if h["id"] == "dflash-check-launch")
    assert hook["pass_filenames"] is True and hook["entry"].split()[:2] == ["dflash-check", "launch"]
    files = re.compile(hook["files"])
    for name in ("serve.sh", "deploy/k8s.yaml", "docker-compose.yml", "Dockerfile", "docker/vllm.Dockerfile",
                 ".github/workflows/serve.yml"):
        assert files.search(name), name
    assert not files.search("README.md") and not files.search("model.py")
    corpus = ROOT / "tests" / "data" / "launch"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for name, code in (("docker/llama-removed-draft-max.Dockerfile", 1),
                       ("docker/llama-removed-draft-max-fixed.Dockerfile", 0)):
        res = subprocess.run([*hook["entry"].split(), "--no-config", str(corpus / name)], cwd=tmp_path,
                             capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == code, res.stdout + res.stderr


def test_action_checks_launch_files(workspace):
    repo, tools, _ = workspace
    deploy = repo / "deploy"
    deploy.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "launch" / "k8s" / "vllm-dspark-as-dflash.yaml", deploy / "vllm.yaml")
    res = _run_step(_step("Run dflash-check"), {"launch-files": "deploy/*.yaml", "args": "--no-pair"}, repo, tools)
    assert res.returncode == 0, res.stderr
    assert _outputs(repo)["exit-code"] == "1"
    results = json.loads((repo / "dflash-check.sarif").read_text())["runs"][0]["results"]
    [df906] = [r for r in results if r["ruleId"] == "DF906"]
    physical = df906["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": "deploy/vllm.yaml"}, "region": {"startLine": 21, "startColumn": 16}}


def test_action_args_are_split_not_evaluated(workspace):
    repo, tools, _ = workspace
    res = _run_step(_step("Run dflash-check"), {"args": "--backend vllm $(touch pwned) ;touch pwned2"}, repo, tools)
    assert res.returncode == 2  # `$(touch pwned)` reached dflash-check as a word, not a command
    assert not (repo / "pwned").exists() and not (repo / "pwned2").exists()
