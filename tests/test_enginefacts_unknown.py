"""A fact the extractor cannot find at a release is unknown there, never a stop (issue #21 item 2): `refresh`
writes every other fact and prints the unknown one, `refresh --check` fails on it, and a check judged at that
release gives the rules that read it one info finding "not judged for ENGINE VERSION: FACT unknown (why)".
And one refresh after a new citation reaches the fixed point (`refresh --check` passes right after).

The real-source cases copy an unpacked wheel (DFLASH_ENGINE_SRC, default /work/wheels/src) and take one anchor
away: transformers 5.24.0, vLLM 0.34.0 and SGLang 0.5.23. Where a release is not unpacked they skip with the
command that fetches it (`python tools/engine_src.py /work/wheels/src --engine transformers==5.24.0`)."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from dflash_compat.enginefacts import build, window
from dflash_compat.enginefacts.__main__ import main
from dflash_compat.engines.registry import select_versions
from dflash_compat.engines.store import release
from tests.configs import draft, run_rule, target

SRC = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))
FIXTURES = Path(__file__).parent / "fixtures" / "enginefacts"


def _fake_release(tmp_path: Path, source: str, package: str, version: str, path: str, old: str, new: str) -> Path:
    """`source` (an unpacked wheel under SRC) as the release `version` of `package` in tmp_path/wheels, with
    `old` replaced by `new` in `path` (the files are hard links where possible; the edited one is new)."""
    src = SRC / source
    if not (src / package).is_dir():
        engine = {"mlx_lm": "mlx-lm"}.get(package, package)
        pytest.skip(f"{src} is not unpacked here: python tools/engine_src.py {SRC} --engine "
                    f"{engine}=={source.rsplit('-', 1)[1]} (DFLASH_ENGINE_SRC names the folder)")
    wheels = tmp_path / "wheels"
    dest = wheels / f"{package}-{version}"

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src / package, dest / package, copy_function=link,
                    ignore=lambda d, names: [n for n in names if n == "__pycache__"])
    target_file = dest / path
    text = target_file.read_text(encoding="utf-8")
    assert old in text, (path, old)
    target_file.unlink()  # a hard link: never write through to the unpacked source
    target_file.write_text(text.replace(old, new), encoding="utf-8")
    return wheels


def _store(tmp_path: Path, engine: str, version: str) -> Path:
    """A bundle whose window is this one release, with the real citations' anchors."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "index.json").write_text(json.dumps({"engines": {engine: {"versions": [version]}}}))
    shutil.copy(window.STORE / "anchors.json", store / "anchors.json")
    return store


def _unknown_at(tmp_path, monkeypatch, capsys, engine, section, version, wheels, fact, why) -> dict:
    """Refresh on demand (exit 0, the unknown fact printed), into the bundle (written, printed) and with
    --check (exit 1). -> the facts written to the user cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    capsys.readouterr()
    assert main(["refresh", "--engine", f"{engine}=={version}", "--wheels", str(wheels)]) == 0
    err = capsys.readouterr().err
    line = next((ln for ln in err.splitlines() if ln.startswith(f"unknown: {engine} {version} {fact}: ")), None)
    assert line is not None and why in line, err[-2000:]
    facts = json.loads((tmp_path / "cache" / "dflash-compat" / "facts" / engine / version / "facts.json").read_text())
    assert fact not in facts and why in facts["unknown"][fact]

    store = _store(tmp_path, engine, version)
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store)]) == 0
    assert f"unknown: {engine} {version} {fact}: " in capsys.readouterr().err
    bundled = json.loads((store / f"{engine}.json").read_text())["facts"]
    assert bundled == facts  # the same facts, every readable one written
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store), "--check"]) == 1
    err = capsys.readouterr().err
    assert f"unknown: {engine} {version} {fact}: " in err and "unknown at a bundled release" in err
    assert "differ from the engines' code" not in err  # the files are up to date; the unknown fact fails it

    sel = select_versions(option=(f"{engine}=={version}",), installed=False)[engine]
    assert (sel.used, sel.status) == (version, "cached")
    assert why in release(engine, version).facts["unknown"][fact]
    return facts


def _not_judged(findings, code: str, engine: str, version: str, fact: str) -> None:
    mine = [f for f in findings if f.code == code]
    assert mine and all(f.severity == "info" for f in mine), [(f.code, f.severity, f.message) for f in findings]
    assert all(f.message.startswith(f"not judged for {engine} {version}: {fact} unknown (") for f in mine), mine
    assert all(f"facts refresh --engine {engine}=={version}" in f.fix for f in mine)


HYBRID = {"model_type": "qwen3_next", "layer_types": ["linear_attention"] * 3 + ["full_attention"]}


def test_transformers_without_its_stateful_marker_is_unknown_and_not_judged(tmp_path, monkeypatch, capsys):
    version = "5.24.90"
    wheels = _fake_release(tmp_path, "transformers-5.24.0", "transformers", version,
                           "transformers/models/mamba/modeling_mamba.py", "_is_stateful = True", "_is_stateful2 = True")
    facts = _unknown_at(tmp_path, monkeypatch, capsys, "transformers", "transformers", version, wheels,
                        "stateful_model_types", "mamba not found")
    # the other facts of that release are read as from the untouched 5.24.0
    same = release("transformers", "5.24.0").facts
    for key in ("recurrent_layer_types", "recurrent_layer_model_types", "no_default_dynamic_cache", "features"):
        assert facts[key] == same[key], key
    found = run_rule("DF201", target(**HYBRID), draft(), versions=[f"transformers=={version}"],
                     backends=("transformers", "dflash"))
    _not_judged(found, "DF201", "transformers", version, "stateful_model_types")
    # the bundled 5.24.0 judges it
    judged = run_rule("DF201", target(**HYBRID), draft(), versions=["transformers==5.24.0"],
                      backends=("transformers",))
    assert [f.severity for f in judged] == ["error"] and "refuses this target" in judged[0].message


def test_vllm_without_its_eagle3_interface_is_unknown_and_not_judged(tmp_path, monkeypatch, capsys):
    version = "0.34.90"
    wheels = _fake_release(tmp_path, "vllm-0.34.0", "vllm", version, "vllm/model_executor/models/interfaces.py",
                           "class SupportsEagle3(", "class SupportsEagleThree(")
    facts = _unknown_at(tmp_path, monkeypatch, capsys, "vllm", "vllm", version, wheels,
                        "supported", "class SupportsEagle3 not found")
    assert {"unsupported", "aux_body_not_mixin", "aux_over_pp"} <= set(facts["unknown"])
    same = release("vllm", "0.34.0").facts
    for key in ("draft_architectures", "draft_registry", "features", "method_config_modules", "speculators_formats"):
        assert facts[key] == same[key], key
    found = run_rule("DF302", target(architectures=["Qwen3ForCausalLM"]), draft(), versions=[f"vllm=={version}"],
                     backends=("vllm",))
    _not_judged(found, "DF302", "vllm", version, "supported")
    # a rule reading only facts that were read still judges: DF301 on a draft vLLM does not load
    judged = run_rule("DF301", target(), draft(architectures=["NoSuchDraftModel"]), versions=[f"vllm=={version}"],
                      backends=("vllm",))
    assert judged and all(f.severity != "info" for f in judged if f.code == "DF301")


def test_sglang_without_its_entryclass_registry_is_unknown_and_not_judged(tmp_path, monkeypatch, capsys):
    version = "0.5.90"
    wheels = _fake_release(tmp_path, "sglang-0.5.23", "sglang", version, "sglang/srt/models/registry.py",
                           "def import_model_classes(", "def import_model_classes_v2(")
    facts = _unknown_at(tmp_path, monkeypatch, capsys, "sglang", "sglang", version, wheels,
                        "supported", "no function `import_model_classes`")
    assert {"unsupported", "hook_delegated_to_missing", "draft_architectures"} <= set(facts["unknown"])
    same = release("sglang", "0.5.23").facts
    for key in ("features", "cli_flags"):
        assert facts[key] == same[key], key
    found = run_rule("DF402", target(architectures=["Qwen3ForCausalLM"]), draft(), versions=[f"sglang=={version}"],
                     backends=("sglang",))
    _not_judged(found, "DF402", "sglang", version, "supported")


# -- one refresh reaches the fixed point after a new citation --------------------------------------


def _fixture_wheels(folder: Path, version: str, edit: tuple[str, str, str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for pkg in build.PACKAGES.values():
        root = FIXTURES / pkg
        with zipfile.ZipFile(folder / f"{pkg}-{version}-py3-none-any.whl", "w") as zf:
            for path in sorted(root.rglob("*.py")):
                name = path.relative_to(root).as_posix()
                text = path.read_text()
                if edit and edit[0] == name:
                    text = text.replace(edit[1], edit[2])
                zf.writestr(name, text)


def test_one_refresh_after_a_new_citation_is_up_to_date(tmp_path, capsys, monkeypatch):
    """New citations typed against two releases (one by default, the newest; one naming an older release):
    every release of the window resolves both on the first refresh, so `--check` right after passes."""
    path = "vllm/config/vllm.py"
    lines = (FIXTURES / "vllm" / path).read_text().splitlines()
    at = next(i for i, t in enumerate(lines, 1) if "_is_dflash_candidate_draft()" in t and "def " not in t)
    wheels = tmp_path / "wheels"
    _fixture_wheels(wheels, "1.0.0")
    # 1.1.0 moves the code three lines down
    _fixture_wheels(wheels, "1.1.0", (path, "class VllmConfig:", "import os  # moved\n\n\nclass VllmConfig:"))
    cites = [("vllm", path, f"{at + 3}-{at + 4}", None),  # typed against the newest bundled (1.1.0)
             ("vllm", path, str(at), "1.0.0")]
    monkeypatch.setattr(window, "citations", lambda: cites)
    store = tmp_path / "store"
    store.mkdir()
    (store / "index.json").write_text(json.dumps({"engines": {e: {"versions": ["1.0.0", "1.1.0"]}
                                                              for e in build.PACKAGES}}))
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store)]) == 0
    capsys.readouterr()
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store), "--check"]) == 0, \
        capsys.readouterr().err[-2000:]
    assert "is up to date" in capsys.readouterr().err
    anchors = json.loads((store / "anchors.json").read_text())["anchors"]
    assert sorted(anchors) == sorted(f"vllm {p}:{ln}" for _, p, ln, _ in cites)
    import gzip

    located = json.loads(gzip.decompress((store / "vllm.sources.json.gz").read_bytes()))
    new = located["cites"]  # the base release, 1.1.0
    assert new == {f"vllm {path}:{at + 3}-{at + 4}": f"{at + 3}-{at + 4}", f"vllm {path}:{at}": str(at + 3)}
    # 1.0.0: both citations, each at its 1.0.0 lines (no patch needed beyond the lines)
    old = located["versions"]["1.0.0"]["cites"]
    assert old == {f"vllm {path}:{at + 3}-{at + 4}": {"$set": f"{at}-{at + 1}"}, f"vllm {path}:{at}": {"$set": str(at)}}


# -- the rules: reading an unknown fact is "not judged", never a guess ------------------------------


def test_reading_an_unknown_fact_raises_instead_of_answering_empty():
    from dflash_compat.engines.store import Facts, UnknownFact

    facts = Facts("vllm", "9.0.0", {"features": ["x"], "unknown": {"draft_v1_refused": "the refusal was not found"}})
    assert facts["features"] == ["x"] and facts.get("unknown") == {"draft_v1_refused": "the refusal was not found"}
    assert facts.get("absent", ()) == () and "features" in facts
    for read in (lambda: facts["draft_v1_refused"], lambda: facts.get("draft_v1_refused", ()),
                 lambda: "draft_v1_refused" in facts):
        with pytest.raises(UnknownFact, match=r"^vllm 9\.0\.0: draft_v1_refused unknown \(the refusal was not found\)$"):
            read()
    assert dict(facts) == {"features": ["x"], "unknown": {"draft_v1_refused": "the refusal was not found"}}


def test_a_rule_that_reads_an_unknown_fact_with_a_default_is_not_judged(monkeypatch):
    """DF310 reads `facts.get("draft_v1_refused", ())`: with that list unknown at the release, an empty
    default would say "V1 serves it"; the rule gives the info instead, for that release."""
    from dflash_compat.engines import store
    from dflash_compat.engines.store import Facts

    dflash2 = draft(architectures=["DFlash2DraftModel"])
    judged = run_rule("DF310", target(), dflash2, backends=("vllm",), versions=["vllm==0.33.0"])
    assert len(judged) == 1 and "DFlash candidate-head drafts" in judged[0].message
    real = store._facts

    def lost(engine, version):
        data = real(engine, version)
        if engine != "vllm":
            return data
        broken = {k: v for k, v in data.items() if k != "draft_v1_refused"}
        broken["unknown"] = {"draft_v1_refused": "vllm/config/vllm.py: the V1 runner's refusal was not found"}
        return Facts("vllm", data.version, broken)

    monkeypatch.setattr(store, "_facts", lost)
    found = run_rule("DF310", target(), dflash2, backends=("vllm",), versions=["vllm==0.33.0"])
    _not_judged(found, "DF310", "vllm", "0.33.0", "draft_v1_refused")
    assert "the V1 runner's refusal was not found" in found[0].message


def test_a_failed_step_makes_each_fact_resting_on_it_unknown_and_spares_the_rest():
    from dflash_compat.enginefacts.facts import Section, Step
    from dflash_compat.enginefacts.source import LayoutError, Loc

    calls = []

    def registry():
        calls.append(1)
        raise LayoutError("registry.py: no module-level `_MODELS = ...`")

    step = Step(registry)
    sec = Section()
    with sec.guard("supported"):
        sec.names("supported", {name: Loc("vllm/a.py", 1) for name in step()})
    with sec.guard("drafts"):
        sec.names("drafts", {name: Loc("vllm/a.py", 2) for name in step()})
    with sec.guard("features"):
        sec.names("features", {"x": Loc("vllm/b.py", 3)})
    with sec.guard("odd"):  # a reader meeting code of another shape: unknown too, with the error named
        sec.names("odd", {n.id: Loc("vllm/c.py", 4) for n in [None]})
    assert calls == [1]  # the step ran once
    assert sec.unknown == {"supported": "registry.py: no module-level `_MODELS = ...`",
                           "drafts": "registry.py: no module-level `_MODELS = ...`",
                           "odd": "the reader failed (AttributeError: 'NoneType' object has no attribute 'id')"}
    assert sec.data == {"features": ["x"]} and set(sec.sources) == {"features"}
    assert sec.facts_json()["unknown"] == sec.unknown


def test_a_deep_check_judges_at_the_release_asked_for(tmp_path, monkeypatch):
    """`dflash-check` with its deep checks (the default) judges every rule at the --engine-version release,
    as the report's `engines` says (the deep context used to drop the selection and judge at the newest)."""
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    pair = Path(__file__).parent / "fixtures" / "pairs" / "qwen3-8b"
    res = CliRunner().invoke(cli, [str(pair / "target"), "--draft", str(pair / "draft"), "--backend", "vllm",
                                   "--engine-version", "vllm==0.33.0", "--format", "json"])
    assert res.exit_code in (0, 1), res.output[-2000:]
    report = json.loads(res.output)
    assert report["engines"]["vllm"]["version"] == "0.33.0"
    judged = {f["code"]: f["judged_for"].get("vllm") for f in report["findings"] if f["backend"] == "vllm"}
    assert judged and set(judged.values()) == {"0.33.0"}, judged
