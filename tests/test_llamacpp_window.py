"""The window of llama.cpp builds through the door a user takes (`--engine-version llama.cpp==bN`): a rule whose
fact differs between bundled builds judges with the selected build's (issue #31.4), and the failure classes of
issue #36 that live in llama.cpp's code per build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.engines import store
from dflash_compat.engines.registry import ENGINES
from tests.gguf_models import draft_gguf, target_gguf, write_gguf

pytest.importorskip("gguf")

V2 = dict(tensors={"selector_hidden.weight": (4, 16), "selector_predecessor.weight": (64, 4),
                   "selector_successor.weight": (64, 4)},
          dflash__conv_kernel_size=4, dflash__conv_group_size=4, dflash__selector_rank=4, dflash__selector_top_k=2)
DSPARK = dict(tensors={"markov_w1.weight": (64, 4), "markov_w2.weight": (64, 4)})
LAUNCH = "llama-server -m {t} -md {d} --spec-type draft-dflash"


def check(t: Path, d: Path, build: str) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--engine-version", f"llama.cpp=={build}", "-f",
                                   "json"])
    return res.exit_code, json.loads(res.output) if res.output.startswith("{") else {"error": res.output}


def launch(command: str, build: str) -> tuple[int, list[dict]]:
    res = CliRunner().invoke(cli, ["launch", "-c", command, "--engine-version", f"llama.cpp=={build}", "-f", "json"])
    doc = json.loads(res.output)
    return res.exit_code, doc["launches"][0]["report"]["findings"]


@pytest.fixture
def target(tmp_path):
    return target_gguf(tmp_path / "t.gguf")


# --- a fact that differs between bundled builds reaches the verdict ------------------------------------------

@pytest.mark.parametrize("build, verdict", [("b10622", 1), ("b10662", 0), ("b11434", 0)])
def test_a_dflash2_draft_is_judged_with_the_selected_builds_loader(tmp_path, target, build, verdict):
    code, doc = check(target, draft_gguf(tmp_path / "v2.gguf", **V2), build)
    assert code == verdict and doc["engines"]["llama.cpp"]["version"] == build
    assert [f["code"] for f in doc["findings"]] == (["DF816"] if verdict else [])
    if verdict:
        assert f"llama.cpp {build} src/llama-model-loader.cpp" in doc["findings"][0]["message"]


@pytest.mark.parametrize("build, verdict", [("b9837", 1), ("b10173", 0)])
def test_a_dspark_draft_is_judged_with_the_selected_builds_loader(tmp_path, target, build, verdict):
    code, doc = check(target, draft_gguf(tmp_path / "ds.gguf", **DSPARK), build)
    assert code == verdict and [f["code"] for f in doc["findings"]] == (["DF816"] if verdict else [])


@pytest.mark.parametrize("build, default", [("b9113", "0.75"), ("b9246", "0"), ("b11434", "0")])
def test_df907_reads_the_p_min_default_of_the_selected_build(tmp_path, target, build, default):
    code, found = launch(LAUNCH.format(t=target, d=draft_gguf(tmp_path / "d.gguf")), build)
    [f] = [f for f in found if f["code"] == "DF907"]
    assert f"llama.cpp {build} defaults to {default} (llama.cpp {build} common/common.h:" in f["message"]


def test_df907_takes_the_default_from_the_facts_not_a_constant(monkeypatch, tmp_path, target):
    real = store._facts

    def patched(engine, version):
        facts = real(engine, version)
        if (engine, version) == ("llama.cpp", "b11434"):
            return store.Facts(engine, version, {**facts, "spec_draft_p_min_default": 0.5})
        return facts

    monkeypatch.setattr(store, "_facts", patched)
    _, found = launch(LAUNCH.format(t=target, d=draft_gguf(tmp_path / "d.gguf")), "b11434")
    [f] = [f for f in found if f["code"] == "DF907"]
    assert "llama.cpp b11434 defaults to 0.5" in f["message"] and "b10662 and older default to 0" in f["message"]


def test_a_stated_p_min_is_judged_by_no_build(tmp_path, target):
    for build in ("b9113", "b11434"):
        _, found = launch(LAUNCH.format(t=target, d=draft_gguf(tmp_path / "d.gguf")) + " --spec-draft-p-min 0.75",
                          build)
        assert "DF907" not in [f["code"] for f in found]


# --- builds before DFlash: DF012, like every engine ----------------------------------------------------------

def test_first_dflash_is_the_rules_lower_bound():
    from dflash_compat.rules.llamacpp._helpers import DFLASH_BUILDS

    assert DFLASH_BUILDS == {"llama.cpp": ">=" + ENGINES["llama.cpp"].first_dflash} == {"llama.cpp": ">=b9837"}


@pytest.mark.parametrize("build, status", [("b9000", "older"), ("b9113", "bundled"), ("b9500", "between")])
def test_a_build_before_dflash_is_a_df012_error_however_its_facts_are_found(tmp_path, target, build, status):
    code, doc = check(target, draft_gguf(tmp_path / "d.gguf"), build)
    assert code == 1 and doc["engines"]["llama.cpp"]["status"] == status
    [f] = doc["findings"]
    assert f["code"] == "DF012" and f["severity"] == "error" and "first release with DFlash is b9837" in f["message"]
    # its DFlash rules do not run at all (not "not judged" infos): they hold from b9837
    assert all(r["status"] == "not-applicable" for r in doc["rules"] if r["code"].startswith("DF8"))


def test_the_first_dflash_build_is_no_df012(tmp_path, target):
    code, doc = check(target, draft_gguf(tmp_path / "d.gguf"), "b9837")
    assert code == 0 and doc["findings"] == []


# --- launch: the build's spec types, and a pair check refuses -------------------------------------------------

@pytest.mark.parametrize("spec, build, bad", [
    ("dflash", "b11434", True), ("draft-dflash", "b11434", False), ("draft-dspark", "b9837", True),
    ("draft-dspark", "b10173", False), ("draft-simple", "b9113", True), ("draft-dflash,ngram-map-k4v", "b11434", False),
])
def test_df912_spec_types_per_build(tmp_path, target, spec, build, bad):
    # the --spec-type names of each bundled build, read from its parser (launch_flags.json)
    d = draft_gguf(tmp_path / "d.gguf")
    _, found = launch(f"llama-server -m {target} -md {d} --spec-type {spec} --spec-draft-p-min 0", build)
    hits = [f for f in found if f["code"] == "DF912"]
    assert bool(hits) == bad, found
    if bad:
        assert f"refused by llama.cpp {build}" in hits[0]["message"]
    if spec == "dflash":
        assert "did you mean --spec-type 'draft-dflash'?" in hits[0]["message"]


def _dflash_draft_arch(path: Path) -> Path:
    """A draft GGUF written under another converter's architecture name (llama.cpp #25116)."""
    meta = {"dflash-draft.block_count": 1, "dflash-draft.embedding_length": 16, "dflash-draft.target_layers": [2, 5],
            "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": [f"tok{i}" for i in range(64)]}
    return write_gguf(path, "dflash-draft", meta, {"fc.weight": (16, 32)})


def _metadata_only(path: Path) -> Path:
    """A DFlash draft GGUF a conversion that found no weights writes: keys, no tensors (ik_llama.cpp #2043)."""
    import gguf

    w = gguf.GGUFWriter(str(path), "dflash")
    w.add_uint32("dflash.block_size", 16)
    w.add_array("dflash.target_layers", [2, 5])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("make, says", [
    (_dflash_draft_arch, "'dflash-draft', not \"dflash\" (another converter's name for a DFlash draft"),
    (_metadata_only, "the GGUF holds no tensors, only 3 metadata keys"),
])
def test_a_draft_check_refuses_is_an_error_in_launch_too(tmp_path, target, make, says):
    d = make(tmp_path / "d.gguf")
    res = CliRunner().invoke(cli, [str(target), "--draft", str(d)])
    assert res.exit_code == 2 and says in res.output and len(res.output.strip().splitlines()) == 1
    code, found = launch(LAUNCH.format(t=target, d=d) + " --spec-draft-p-min 0", "b11434")
    assert code == 1 and [(f["code"], f["severity"]) for f in found] == [("DF910", "error")]
    assert says in found[0]["message"] and "the pair cannot be served" in found[0]["message"]


def test_a_metadata_only_draft_says_so_before_any_missing_key(tmp_path, target):
    res = CliRunner().invoke(cli, [str(target), "--draft", str(_metadata_only(tmp_path / "d.gguf"))])
    assert "num_hidden_layers" not in res.output and "llama.cpp b11434 src/llama-model-loader.cpp:1159" in res.output


def test_a_pair_that_cannot_be_read_stays_not_judged(tmp_path, target):
    code, found = launch(LAUNCH.format(t=target, d=tmp_path / "absent.gguf") + " --spec-draft-p-min 0", "b11434")
    assert [(f["code"], f["severity"]) for f in found] == [("DF910", "warning")] and code == 0


def test_a_launch_pinned_before_dflash_is_df913(tmp_path, target):
    code, found = launch(LAUNCH.format(t=target, d=draft_gguf(tmp_path / "d.gguf")), "b9500")
    assert code == 1 and "DF913" in [f["code"] for f in found]


def test_df818_in_launch_as_in_check(tmp_path):
    pytest.importorskip("transformers")
    demo = Path(__file__).resolve().parent.parent / "examples" / "demo"
    code, found = launch(f"llama-server -m {demo / 'target'} -md {demo / 'draft'} --spec-type draft-dflash "
                         "--spec-draft-p-min 0", "b11434")
    assert code == 0 and [f["code"] for f in found] == ["DF818"]
    assert 'get_vocab_base_pre = lambda self, tokenizer: "gpt-2"' in found[0]["message"]
