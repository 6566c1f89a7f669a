"""Settings for the CI gate in a file: [tool.dflash-check] in pyproject.toml or a dflash-check.toml, found
from the current folder upward; flags win; severity overrides reach every format; bad settings are one
line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.checker import severity_override
from dflash_compat.cli.app import cli
from dflash_compat.cli.commands.config_file import find_config
from tests.configs import draft, target, write_model


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A model repository: the target at its root, a draft beside it (DF108 warns: it names 40 layers)."""
    write_model(tmp_path, target())
    write_model(tmp_path / "drafts" / "d", draft(num_target_layers=40, hidden_size=4096))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text('[project]\nname = "my-model"\n\n[tool.dflash-check]\n' + body)
    return path


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def run_json(*args):
    res = run(*args, "-f", "json")
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.stdout)


def one_line_error(res, *words):
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error:"), res.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_discovery_order(tmp_path):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(deep) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no table: not a settings file
    assert find_config(deep) is None
    pyproject(tmp_path / "a", 'draft = "d"\n')
    assert find_config(deep) == tmp_path / "a" / "pyproject.toml"
    (tmp_path / "a" / "dflash-check.toml").write_text('draft = "d"\n')
    assert find_config(deep) == tmp_path / "a" / "dflash-check.toml"  # beside a pyproject, it wins


@pytest.mark.parametrize("body, found", [
    ('[tool.dflash-check]\ndraft = "d"\n', True),
    ('[tool."dflash-check"]\ndraft = "d"\n', True),
    ('[ tool . dflash-check ]\ndraft = "d"\n', True),
    ('[tool]\ndflash-check = { draft = "d" }\n', True),
    ('tool = { dflash-check = { draft = "d" } }\n', True),
    ('tool.dflash-check.draft = "d"\n', True),
    ('[project.scripts]\ndflash-check = "dflash_compat.cli.app:main"\n', False),  # named, but not our table
    ('# [tool.dflash-check] would go here\n[project]\nname = "x"\n', False),  # parsed: a comment only
])
def test_every_spelling_of_the_table_is_found(tmp_path, body, found):
    """A pyproject.toml that cannot hold the table is skipped unparsed; every TOML spelling of it is found."""
    (tmp_path / "pyproject.toml").write_text(body)
    assert (find_config(tmp_path) is not None) == found


def test_an_unrelated_broken_pyproject_is_never_parsed(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project\nname = "x"\n')  # not TOML, and not ours
    assert find_config(tmp_path) is None


def test_plain_dflash_check_runs_the_configured_check_from_a_subfolder(repo, monkeypatch):
    pyproject(repo, 'target = "."\ndraft = "drafts/d"\nno-deep = true\nbackends = ["vllm", "mlx"]\n'
                    'format = "json"\n')
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    res = run()
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["backends"] == ["vllm", "mlx"]
    assert report["target"]["source"] == str(repo) and report["draft"]["source"] == str(repo / "drafts" / "d")


def test_flags_win_over_the_file(repo):
    pyproject(repo, 'target = "."\ndraft = "drafts/d"\nno-deep = true\nbackends = ["vllm"]\nstrict = true\n')
    code, report = run_json("check")
    assert code == 1 and report["strict"] is True and report["backends"] == ["vllm"]
    code, report = run_json("check", "-b", "mlx", "--draft", repo / "drafts" / "d")
    assert report["backends"] == ["mlx"] and report["strict"] is True
    assert run("--no-config", ".", "--draft", "drafts/d", "--no-deep").exit_code == 0  # not strict without the file


def test_dflash_check_toml_and_config_option(repo, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("ci")
    settings = elsewhere / "gate.toml"
    settings.write_text(f'target = "{repo}"\ndraft = "{repo / "drafts" / "d"}"\nno-deep = true\n'
                        'select = ["DF1"]\noutput = "report.json"\nformat = "json"\n')
    res = run("check", "--config", settings)
    assert res.exit_code == 0, res.output
    report = json.loads((elsewhere / "report.json").read_text())  # output: relative to the settings file
    assert {f["code"][:3] for f in report["findings"]} <= {"DF1"}
    (repo / "dflash-check.toml").write_text('draft = "drafts/d"\ntarget = "."\nno-deep = true\n')
    assert run().exit_code == 0


def test_severity_overrides_reach_the_report(repo):
    pyproject(repo, 'target = "."\ndraft = "drafts/d"\nno-deep = true\n'
                    'severity = {DF108 = "error", DF3 = "info", DF311 = "ignore"}\n')
    code, report = run_json("check")
    assert code == 1  # the DF108 warning is now an error
    levels = {f["code"]: f["severity"] for f in report["findings"]}
    assert levels["DF108"] == "error" and "DF311" not in levels
    runs = {r["code"]: r for r in report["rules"]}
    assert runs["DF108"]["severity"] == "error" and runs["DF301"]["severity"] == "info" and "DF311" not in runs
    sarif = json.loads(run("check", "-f", "sarif").stdout)
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["DF108"]["defaultConfiguration"]["level"] == "error"
    # a flag on top: back to a warning
    code, report = run_json("check", "--severity", "DF108=warning")
    assert code == 0 and {f["code"]: f["severity"] for f in report["findings"]}["DF108"] == "warning"


def test_longest_prefix_wins():
    assert severity_override("DF311", {"DF3": "info", "DF31": "error"}) == "error"
    assert severity_override("DF301", {"DF3": "info", "DF31": "error"}) == "info"
    assert severity_override("DF101", {"DF3": "info"}) is None


@pytest.mark.parametrize(("body", "words"), [
    ('tp = "two"\n', ["tp:", "expected a number", "'two'"]),
    ("tp = 0\n", ["tp:", "0"]),
    ('backends = ["vllm", "nope"]\n', ["backends:", "nope"]),
    ('strict = "yes"\n', ["strict:", "true or false"]),
    ("select = 3\n", ["select:", "list of strings"]),
    ("colour = true\n", ["unknown key 'colour'"]),
    ("config-file = 'x'\n", ["unknown key 'config-file'"]),
    ('severity = {DF999 = "error"}\n', ["severity.DF999", "matches no rule"]),
    ('severity = {DF101 = "fatal"}\n', ["severity.DF101", "ignore"]),
    ('severity = "DF101=error"\n', ["severity:", "table"]),
    ("trust-remote-code = true\n", ["trust-remote-code", "not allowed in a config file"]),
    ('adapter = "shim.py"\n', ["adapter", "not allowed"]),
    ('token = "hf_x"\n', ["token", "HF_TOKEN"]),
    ("target = \n", ["not valid TOML"]),
])
def test_bad_settings_are_one_line_naming_the_key(repo, body, words):
    path = pyproject(repo, body)
    one_line_error(run("check", ".", "--draft", "drafts/d", "--no-deep"), str(path), *words)


def test_config_option_errors(repo):
    one_line_error(run("check", "--config", "missing.toml"), "--config missing.toml", "no such file")
    one_line_error(run("check", "--config", "x.toml", "--no-config"), "contradict")
    one_line_error(run("check", ".", "--draft", "drafts/d", "--severity", "DF108"), "CODE=LEVEL")
    bare = repo / "bare.toml"
    bare.write_text("")  # an empty dflash-check-style file is fine: no settings
    assert run("check", ".", "--draft", "drafts/d", "--no-deep", "--config", bare).exit_code == 0
    pyproject(repo, 'tp = "two"\n')
    assert run("check", "--help").exit_code == 0  # the help never reads the file
    assert run("check", ".", "--draft", "drafts/d", "--no-deep", "--no-config").exit_code == 0


def test_sglang_launch_options_are_settings_keys_too(repo):
    """Keys come from check's options: the SGLang ones rules-serving added need no list of their own."""
    pyproject(repo, 'target = "."\ndraft = "drafts/d"\nbackends = ["sglang"]\nno-deep = true\nattn-dp-size = 4\n'
                    'quantization = "fp8"\n')
    _, report = run_json("check")
    assert {"DF405", "DF410"} <= {f["code"] for f in report["findings"]}
    _, report = run_json("check", "--enable-dp-lm-head", "--draft-quantization", "unquant")
    assert not {"DF405", "DF410"} & {f["code"] for f in report["findings"]}
    pyproject(repo, 'target = "."\ndraft = "drafts/d"\nno-deep = true\nattn-dp-size = "4"\n')
    one_line_error(run(), "attn-dp-size", "expected a number")
