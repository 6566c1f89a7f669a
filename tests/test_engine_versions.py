"""Choosing the engine release a check judges against (--engine-version, the settings file, what is
installed, the newest bundled), and the verdicts that change with it across the bundled window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.checker import Rule, RuleContext, check_rules
from dflash_compat.cli.app import cli
from dflash_compat.engines.registry import (
    ENGINES,
    EngineInfo,
    bundled_versions,
    llama_build_key,
    parse_spec,
    satisfies,
    select_versions,
)
from dflash_compat.exceptions import InputError
from dflash_compat.rules import RULES_BY_CODE
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.configs import draft, run_rule, target

ROOT = Path(__file__).resolve().parent.parent
PAIR = [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep"]


@pytest.fixture
def nothing_installed(monkeypatch):
    monkeypatch.setattr(EngineInfo, "installed_version", lambda self: None)


# -- parsing and selecting --------------------------------------------------------------------------


def test_parse_spec():
    assert parse_spec("vllm==0.34.0") == ("vllm", "0.34.0")
    assert parse_spec(" MLX-LM==0.32.2 ") == ("mlx-lm", "0.32.2")
    for bad, needle in (("vllm=0.34", "expected NAME==VERSION"), ("vllm", "expected NAME==VERSION"),
                        ("vllm===0.34", "expected NAME==VERSION"), ("vlm==0.34.0", "unknown engine 'vlm'"),
                        ("vllm==latest", "not a vllm version")):
        with pytest.raises(InputError, match=needle):
            parse_spec(bad)


def test_versions_sort_as_releases():
    assert satisfies("vllm", "0.33.0", "<0.34.0") and not satisfies("vllm", "0.34.0", "<0.34.0")
    assert satisfies("transformers", "5.25.0", ">=5.25") and satisfies("transformers", "5.22.2", ">5.22.1,<5.23")
    assert satisfies("vllm", "0.34.0rc1", "<0.34.0") and satisfies("vllm", "0.34.0.post1", ">0.34.0")
    assert llama_build_key("b11434") == (11434,) < llama_build_key("b11500")
    with pytest.raises(ValueError):
        satisfies("vllm", "0.34.0", "~=0.34")


def test_precedence_option_launch_config_installed_default(monkeypatch):
    monkeypatch.setattr(EngineInfo, "installed_version",
                        lambda self: {"transformers": "5.24.0", "vllm": "0.32.0"}.get(self.name))
    v = select_versions(option=("vllm==0.33.0",), launch={"vllm": "0.34.0", "sglang": "0.5.21"},
                        config={"sglang": "0.5.22", "mlx-lm": "0.31.1"})
    assert {n: (s.used, s.origin) for n, s in v.items()} == {
        "vllm": ("0.33.0", "option"), "sglang": ("0.5.21", "launch-file"), "dflash": ("0.1.0", "default"),
        "mlx-lm": ("0.31.1", "config"), "transformers": ("5.24.0", "installed"),
        "speculators": (bundled_versions("speculators")[-1], "default"),
        "llama.cpp": (bundled_versions("llama.cpp")[-1], "default")}


def test_outside_the_window_falls_back_and_says_so(nothing_installed):
    v = select_versions(option=("vllm==0.99.1", "transformers==5.10.0", "sglang==0.5.22.post1", "mlx-lm==0.32"))
    assert (v["vllm"].used, v["vllm"].status, v["vllm"].requested) == ("0.34.0", "newer", "0.99.1")
    assert (v["transformers"].used, v["transformers"].status) == ("5.22.0", "older")
    assert (v["sglang"].used, v["sglang"].status) == ("0.5.22", "between")  # the nearest older release
    assert (v["mlx-lm"].used, v["mlx-lm"].status) == ("0.32.0", "bundled")  # 0.32 is 0.32.0


def test_two_versions_of_one_engine_are_refused():
    with pytest.raises(InputError, match="already set"):
        select_versions(option=("vllm==0.33.0", "vllm==0.34.0"), installed=False)


def test_installed_version_comes_from_metadata_not_an_import():
    import sys

    had = "transformers" in sys.modules
    version = ENGINES["transformers"].installed_version()
    assert version is None or isinstance(version, str)
    assert had or "transformers" not in sys.modules  # reading metadata imports nothing
    assert ENGINES["vllm"].installed_version() is None  # never installed here


# -- the CLI --------------------------------------------------------------------------------------


def _json(args, **kw):
    res = CliRunner().invoke(cli, [*PAIR, "-f", "json", *args], catch_exceptions=False, **kw)
    return res, (json.loads(res.output) if res.output.startswith("{") else None)


def test_engine_version_option_reaches_the_report(nothing_installed):
    res, report = _json(["--engine-version", "vllm==0.33.0", "-b", "vllm"])
    assert report["engines"]["vllm"] == {"version": "0.33.0", "requested": "0.33.0", "origin": "option",
                                         "status": "bundled"}
    assert report["engines"]["speculators"]["origin"] == "default"
    assert set(report["engines"]) == {"vllm", "speculators"}  # the engines of the selected backends
    for f in report["findings"]:
        assert f["judged_for"].get("vllm") in (None, "0.33.0")
    assert any(f["judged_for"].get("vllm") == "0.33.0" for f in report["findings"])


def test_the_text_report_prints_one_engines_line(nothing_installed):
    res = CliRunner().invoke(cli, [*PAIR, "-b", "vllm", "--engine-version", "vllm==0.33.0"], env={"COLUMNS": "80"})
    lines = [ln for ln in res.output.splitlines() if ln.startswith("engines ")]
    assert lines == ["engines vllm 0.33.0 (option), speculators " + bundled_versions("speculators")[-1] + " (default)"]


def test_newer_and_older_releases_warn_with_the_refresh_command(nothing_installed):
    res, report = _json(["--engine-version", "vllm==0.35.0", "--engine-version", "transformers==5.19.0"])
    by_code = {f["code"]: f for f in report["findings"] if f["code"] in ("DF011", "DF012")}
    assert by_code["DF011"]["severity"] == "warning" and by_code["DF011"]["backend"] == "vllm"
    assert "vllm 0.35.0" in by_code["DF011"]["message"] and "vllm 0.34.0 instead" in by_code["DF011"]["message"]
    assert "dflash-check facts refresh --engine vllm==0.35.0" in by_code["DF011"]["fix"]
    assert "transformers 5.22.0 instead" in by_code["DF012"]["message"]
    assert report["engines"]["vllm"]["status"] == "newer" and report["engines"]["vllm"]["requested"] == "0.35.0"


def test_a_release_before_the_first_with_dflash_is_an_error(nothing_installed, tmp_path):
    res, report = _json(["--engine-version", "vllm==0.19.1", "-b", "vllm"])
    [f] = [f for f in report["findings"] if f["code"] == "DF012"]
    assert f["severity"] == "error" and "predates DFlash" in f["message"] and "0.20.0" in f["message"]
    assert res.exit_code == 1
    refresh = CliRunner().invoke(cli, ["facts", "refresh", "--engine", "vllm==0.19.1", "--cache", str(tmp_path)])
    assert refresh.exit_code == 2 and "vLLM 0.19.1 predates DFlash" in refresh.output
    assert len(refresh.output.strip().splitlines()) == 1 and not any(tmp_path.iterdir())
    # the first release with it is read on demand (DF012 warns, no error)
    res, report = _json(["--engine-version", "vllm==0.20.0", "-b", "vllm"])
    [f] = [f for f in report["findings"] if f["code"] == "DF012"]
    assert f["severity"] == "warning" and "facts refresh --engine vllm==0.20.0" in f["fix"]


def test_first_dflash_releases_match_the_docs_table():
    import re

    docs = (Path(__file__).resolve().parent.parent / "docs" / "engine-facts.md").read_text()
    docs = docs.split("| first release with DFlash |", 1)[1].split("\n\n", 1)[0]
    rows = dict(re.findall(r"^\| (\S+) \| (\S+)(?: \([^)]*\))? \|", docs, flags=re.M))
    for name, info in ENGINES.items():
        if info.package is None:
            continue
        assert rows[info.label] == (info.first_dflash or "n/a"), name


def test_bundled_releases_give_no_version_warning(nothing_installed):
    res, report = _json(["--engine-version", "vllm==0.34.0"])
    assert not any(f["code"] in ("DF011", "DF012") for f in report["findings"])


@pytest.mark.parametrize("arg,needle", [
    ("vllm=0.34", "expected NAME==VERSION"), ("foo==1.0", "unknown engine 'foo'"), ("vllm==x.y", "not a vllm"),
])
def test_a_malformed_version_is_one_line_exit_2(arg, needle):
    res = CliRunner().invoke(cli, [*PAIR, "--engine-version", arg])
    assert res.exit_code == 2 and needle in res.output and res.output.strip().count("\n") == 0
    assert "Traceback" not in res.output


def test_the_settings_file_table(tmp_path, monkeypatch, nothing_installed):
    (tmp_path / "dflash-check.toml").write_text('engine-versions = { vllm = "0.32.0", transformers = "5.25.0" }\n')
    monkeypatch.chdir(tmp_path)
    res, report = _json(["-b", "vllm", "-b", "transformers"])
    assert report["engines"]["vllm"]["version"] == "0.32.0" and report["engines"]["vllm"]["origin"] == "config"
    res, report = _json(["--engine-version", "vllm==0.34.0"])  # the option wins
    assert report["engines"]["vllm"]["origin"] == "option"
    (tmp_path / "dflash-check.toml").write_text('engine-versions = { vllm = "0.3x" }\n')
    res = CliRunner().invoke(cli, PAIR)
    assert res.exit_code == 2 and "engine-versions" in res.output and res.output.strip().count("\n") == 0


# -- rules that hold for some releases --------------------------------------------------------------


def _runs(code, draft_cfg, spec, target_cfg=None):
    t = parse_target_config(target_cfg or target(), "t")
    d = parse_draft_config(draft_cfg, "d")
    ctx = RuleContext(target=t, draft=d, versions=select_versions(option=(spec,), installed=False))
    return check_rules(ctx, [RULES_BY_CODE[code]], ("vllm",))


V2_DRAFT = draft(architectures=["DFlash2DraftModel"])
MROPE = draft(rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20]})


@pytest.mark.parametrize("code,cfg", [("DF310", V2_DRAFT), ("DF305", MROPE)])
def test_v1_only_rules_run_up_to_0_33_and_are_listed_not_applicable_on_0_34(code, cfg):
    on33 = _runs(code, cfg, "vllm==0.33.0")
    assert on33.rules[0].status == "ran" and [f.code for f in on33.findings] == [code]
    assert on33.findings[0].judged_for["vllm"] == "0.33.0"
    on34 = _runs(code, cfg, "vllm==0.34.0")
    assert on34.rules[0].status == "not-applicable" and not on34.findings
    assert "vllm 0.34.0" in on34.rules[0].reason and "<0.34.0" in on34.rules[0].reason


def test_df308_eagle_config_block_matters_only_where_the_v1_runner_exists():
    cfg = draft(eagle_config={"eagle_aux_hidden_state_layer_ids": [5, 6, 7]})
    assert run_rule("DF308", target(), cfg, versions=["vllm==0.33.0"])
    assert not run_rule("DF308", target(), cfg, versions=["vllm==0.34.0"])


def test_ricursive_dflash2_is_refused_by_name_before_0_34():
    cfg = draft(architectures=["DFlash2RicursiveDraftModel"], no_rope_layers=[0])
    [f] = run_rule("DF301", target(), cfg, versions=["vllm==0.33.0"])
    assert f.severity == "error" and "vllm 0.33.0" in f.message
    assert not run_rule("DF301", target(), cfg, versions=["vllm==0.34.0"])
    assert parse_draft_config(cfg, "d").format == "ricursive-dflash2"


def test_ricursive_dflash2_needs_no_rope_layers():
    cfg = draft(architectures=["DFlash2RicursiveDraftModel"])
    found = [f for f in run_rule("DF009", target(), cfg, versions=["vllm==0.34.0"]) if f.backend == "vllm"]
    assert len(found) == 1 and "no_rope_layers" in found[0].message and "vllm 0.34.0" in found[0].message
    ok = draft(architectures=["DFlash2RicursiveDraftModel"], no_rope_layers=[0, 3])
    assert not [f for f in run_rule("DF009", target(), ok, versions=["vllm==0.34.0"]) if f.backend == "vllm"]


HYBRID = target(model_type="qwen3_next", layer_types=["linear_attention"] * 3 + ["full_attention"],
                num_hidden_layers=4)


def _df201(spec):
    from dflash_compat.rules.transformers.df201_target_cache_not_croppable import check

    t = parse_target_config(HYBRID, "t")
    ctx = RuleContext(target=t, draft=parse_draft_config(draft(), "d"),
                       versions=select_versions(option=(spec,), installed=False))
    return list(check(ctx))


def test_df201_native_generate_depends_on_the_transformers_release():
    on24 = _df201("transformers==5.24.0")
    native = [v for v in on24 if "transformers" in v.backends]
    assert len(native) == 1 and "not supported with stateful models" in native[0].message
    assert "5.24.0" in native[0].message and native[0].severity is None  # the rule's own: an error
    on25 = _df201("transformers==5.25.0")
    # the reference never rolls the state back; 5.25.0's native path does where the model's code records it,
    # which only the module tree shows (config-only here: a warning that says so, not an error)
    assert [(v.backends, v.severity) for v in on25] == [(("dflash",), None), (("transformers",), "warning")]
    assert "dflash reference" in on25[0].message and "not judged here" in on25[1].message


def test_df201_quotes_the_transformers_release_it_was_judged_at():
    for spec in ("transformers==5.24.0", "transformers==5.25.0"):
        found = run_rule("DF201", HYBRID, draft(), versions=[spec])
        ref = [f for f in found if f.backend == "dflash"]
        assert ref and ref[0].severity == "error" and ref[0].judged_for["transformers"] == spec.split("==")[1]


def test_a_rule_whose_fact_is_unknown_is_not_judged(monkeypatch):
    from dflash_compat.engines import store

    real = store._facts

    def fake(engine, version):
        data = real(engine, version)
        if engine == "vllm":
            data = store.Facts(engine, version, {**data, "unknown": {
                "draft_v1_refused": "vllm/config/vllm.py: the refusal was not found"}})
        return data

    monkeypatch.setattr(store, "_facts", fake)
    rule = Rule(code="DF999", name="probe", severity="error", backends=("vllm",), check=lambda ctx: iter(()),
                what="w", why="y", example="e", fix="f", requires=("vllm.draft_v1_refused",))
    t, d = parse_target_config(target(), "t"), parse_draft_config(draft(), "d")
    res = check_rules(RuleContext(target=t, draft=d), [rule], ("vllm",))
    [f] = res.findings
    assert f.severity == "info" and f.message.startswith("not judged for vllm 0.34.0: draft_v1_refused")
    assert "dflash-check facts refresh --engine vllm==0.34.0" in f.fix and res.rules[0].status == "skipped"


def test_a_rule_with_a_bad_version_spec_fails_at_import():
    with pytest.raises(ValueError):
        Rule(code="DF998", name="x", severity="info", backends=("vllm",), check=lambda c: iter(()), what="w",
             why="y", example="e", fix="f", versions={"vllm": "~0.34"})
    with pytest.raises(ValueError, match="not an engine"):
        Rule(code="DF998", name="x", severity="info", backends=("vllm",), check=lambda c: iter(()), what="w",
             why="y", example="e", fix="f", versions={"vlm": "<0.34.0"})


# -- the weekly workflow ----------------------------------------------------------------------------


def test_the_weekly_workflow_refreshes_checks_tests_and_proposes():
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github/workflows/engine-releases.yml").read_text())
    triggers = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"][0]["cron"].split()[4] in ("1", "MON") and "workflow_dispatch" in triggers
    steps = flow["jobs"]["refresh"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "enginefacts refresh" in runs and "--bundle" in runs and "--check" in runs and "pytest" in runs
    for engine in ("vllm", "sglang", "transformers", "mlx-lm", "dflash", "speculators"):
        assert f"--engine {engine}" in runs
    assert any(s.get("uses", "").startswith("peter-evans/create-pull-request@") for s in steps)
    assert any(s.get("uses", "").startswith("actions/cache@") for s in steps)
    assert flow["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert flow["jobs"]["refresh"]["timeout-minutes"] <= 60


def test_the_package_ships_every_bundled_facts_file():
    import fnmatch

    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "dflash_compat"]
    data = ROOT / "dflash_compat"
    files = [p.relative_to(data).as_posix() for p in (data / "engines" / "data").rglob("*") if p.is_file()]
    assert any(f.endswith(".json.gz") for f in files)
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pat) and f.count("/") == pat.count("/")
                                           for pat in patterns)]
    assert missing == []


# -- serve follows the release ----------------------------------------------------------------------


def _serve(*args):
    return CliRunner().invoke(cli, ["serve", "examples/qwen3-8b/target", "--draft", "examples/qwen3-8b/draft",
                                    "--engine", "sglang", "--no-deep", "-f", "json", *args])


def test_sglang_launch_flags_per_release():
    from dflash_compat.engines.store import release

    flags = {v: set(release("sglang", v).facts["cli_flags"]) for v in ("0.5.21", "0.5.22", "0.5.23")}
    assert "--attn-dp-size" not in flags["0.5.21"] and "--attn-dp-size" in flags["0.5.22"]
    assert {"--dp-size", "--enable-dp-attention", "--speculative-dflash-block-size"} <= flags["0.5.21"]


def test_serve_prints_the_flags_the_release_accepts():
    from dflash_compat.engines.store import release
    from dflash_compat.serve.plan import LaunchPlan, for_release

    plan = LaunchPlan("sglang", ["python", "-m", "sglang.launch_server", "--model-path", "m", "--attn-dp-size", "2",
                                 "--enable-dp-lm-head"])
    old = for_release(plan, frozenset(release("sglang", "0.5.21").facts["cli_flags"]), "0.5.21")
    assert old.argv[-4:] == ["--dp-size", "2", "--enable-dp-attention", "--enable-dp-lm-head"]
    assert "0.5.21" in old.notes[-1]
    new = for_release(plan, frozenset(release("sglang", "0.5.23").facts["cli_flags"]), "0.5.23")
    assert new.argv == plan.argv
    with pytest.raises(InputError, match="SGLang 0.5.23 does not accept --made-up-flag"):
        for_release(LaunchPlan("sglang", ["--model-path", "m", "--made-up-flag", "1"]),
                    frozenset(release("sglang", "0.5.23").facts["cli_flags"]), "0.5.23")


def test_serve_judges_at_the_selected_release(monkeypatch):
    monkeypatch.chdir(ROOT)
    ok = _serve("--attn-dp-size", "2", "--enable-dp-lm-head", "--engine-version", "sglang==0.5.23")
    assert ok.exit_code == 0 and "--attn-dp-size" in json.loads(ok.output)["argv"]
    old = _serve("--attn-dp-size", "2", "--enable-dp-lm-head", "--engine-version", "sglang==0.5.21")
    assert old.exit_code == 1
    [f] = [f for f in json.loads(old.output)["findings"] if f["code"] == "DF410"]
    assert "SGLang 0.5.21 refuses DFLASH with attention data parallelism" in f["message"]
    assert _serve("--engine-version", "sglang=0.5").exit_code == 2


# -- probe reads the server's release -----------------------------------------------------------------


class _Resp:
    def __init__(self, status, data):
        self.ok, self._data = status == 200, data

    def json(self):
        return self._data


class _Client:
    def __init__(self, routes):
        self.routes = routes

    def get(self, path):
        return _Resp(200, self.routes[path]) if path in self.routes else _Resp(404, {})


def test_probe_reads_the_servers_release():
    from dflash_compat.liveprobe.probe import engine_release

    assert engine_release(_Client({"/version": {"version": "0.33.0"}}), "vllm", {}) == {
        "reported": "0.33.0", "facts": "0.33.0", "status": "bundled"}
    assert engine_release(_Client({"/version": {"version": "0.35.0"}}), "vllm", {})["facts"] == "0.34.0"
    assert engine_release(_Client({}), "vllm", {}) is None  # an old server without /version
    assert engine_release(_Client({"/version": {"version": "<script>"}}), "vllm", {}) is None
    assert engine_release(_Client({}), "sglang", {"version": "0.5.22"})["facts"] == "0.5.22"


def test_a_release_whose_converter_rule_is_unknown_is_not_judged(tmp_path, monkeypatch):
    """Facts on demand for a release whose layout a reader does not know: the rule that needs the missing
    fact says "not judged for" that release instead of a verdict (the cache is written like `facts refresh`)."""
    from dflash_compat.engines.store import release

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "dflash-compat" / "facts" / "speculators" / "0.7.0"
    folder.mkdir(parents=True)
    facts = {k: v for k, v in release("speculators", "0.9.0").facts.items()}
    facts["unknown"] = {"converter_drops_last_layer_id": "speculators/convert/dflash/converter.py: not found"}
    (folder / "facts.json").write_text(json.dumps(facts))
    (folder / "sources.json").write_text(json.dumps({"sources": {}, "cites": {}}))
    cfg = draft(**{"dflash_config.target_layer_ids": [1, 9, 17, 25, 35]})
    [f] = run_rule("DF128", target(), cfg, backends=("vllm",), versions=["speculators==0.7.0"])
    assert f.severity == "info" and f.message.startswith("not judged for speculators 0.7.0: converter_drops")
    assert f.judged_for["speculators"] == "0.7.0"
