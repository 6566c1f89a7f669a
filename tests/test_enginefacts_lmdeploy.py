"""lmdeploy's facts reader on a fixture tree laid out like its wheel, the bundled 0.18.0 facts, and (where the
wheels are unpacked under /work/wheels/src) what the real 0.17.0 and 0.18.0 code gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dflash_compat.enginefacts import lmdeploy
from dflash_compat.enginefacts.launch_flags import lmdeploy_flags
from dflash_compat.enginefacts.source import SourceTree
from dflash_compat.engines.registry import ENGINES, bundled_versions, select_versions
from dflash_compat.engines.store import release

FIXTURE = Path(__file__).parent / "fixtures" / "enginefacts" / "lmdeploy"
WHEELS = Path("/work/wheels/src")


def _read(root: Path = FIXTURE):
    tree = SourceTree.open(root)
    try:
        return lmdeploy.extract(tree)
    finally:
        tree.close()


def test_drafts_capture_turbomind_and_flags_are_read_from_the_fixture():
    sec = _read()
    assert sec.data["draft_architectures"] == ["DFlashDraftModel"]
    assert sec.data["supported"] == ["Qwen3ForCausalLM"]  # its module reads the resolved layer ids
    assert sec.data["unsupported"] == ["LlamaForCausalLM"]
    assert sec.sources["supported"]["Qwen3ForCausalLM"]["file"] == "lmdeploy/pytorch/models/qwen3.py"
    assert sec.data["turbomind_architectures"] == ["LlamaForCausalLM", "Qwen3ForCausalLM"]
    assert sec.data["speculative_algorithms"] == ["dflash", "eagle3"]
    assert sec.data["cli_flags"] == ["--backend", "--dtype", "--server-port", "--speculative-algorithm",
                                     "--speculative-draft-model", "--tp"]
    assert sec.sources["cli_flags"]["--tp"]["file"] == "lmdeploy/cli/utils.py"
    # the fixture holds two refusals and the auto backend; the others are absent there, not guessed
    assert sec.data["features"] == ["auto_backend", "block_size_nested_only", "dp_refused"]
    assert "unknown" not in sec.facts_json()


def test_a_changed_model_table_is_unknown_and_the_rest_is_read(tmp_path):
    root = tmp_path / "lmdeploy"
    shutil.copytree(FIXTURE, root)
    path = root / "lmdeploy/pytorch/models/module_map.py"
    path.write_text(path.read_text().replace("MODULE_MAP.update({\n    'LlamaForCausalLM'",
                                             "OTHER.update({\n    'LlamaForCausalLM'"))
    facts = _read(root).facts_json()
    assert "LlamaForCausalLM not found" in facts["unknown"]["draft_architectures"]
    assert set(facts["unknown"]) == {"draft_architectures", "supported", "unsupported"}
    assert facts["turbomind_architectures"] and facts["cli_flags"]


def test_launch_flags_of_the_fixture():
    tree = SourceTree.open(FIXTURE)
    out = lmdeploy_flags(tree)
    assert out["flags"]["--backend"] == ["lmdeploy/cli/utils.py", 5] and out["underscores"] is False


def test_lmdeploy_is_registered_with_its_first_dflash_release_and_bundled_window():
    info = ENGINES["lmdeploy"]
    assert info.first_dflash == "0.18.0" and info.backends == ("lmdeploy",)
    assert bundled_versions("lmdeploy") == ("0.18.0",)
    assert info.predates_dflash("0.17.0") and not info.predates_dflash("0.18.0")
    facts = release("lmdeploy", "0.18.0").facts
    assert facts["draft_architectures"] == ["DFlashDraftModel"]
    assert {"Qwen3ForCausalLM", "Qwen3_5ForConditionalGeneration"} <= set(facts["supported"])
    assert "Qwen3MoeForCausalLM" in facts["unsupported"]
    assert "block_size_nested_only" in facts["features"]
    src = release("lmdeploy", "0.18.0").source("features", "block_size_nested_only")
    assert (src.path, src.lines) == ("lmdeploy/pytorch/spec_decode/dflash_utils.py", "142")
    sel = select_versions(option=("lmdeploy==0.17.0",), engines=["lmdeploy"])["lmdeploy"]
    assert (sel.used, sel.status) == ("0.18.0", "older")


@pytest.mark.skipif(not (WHEELS / "lmdeploy-0.17.0").is_dir() or not (WHEELS / "lmdeploy-0.18.0").is_dir(),
                    reason="lmdeploy 0.17.0 / 0.18.0 wheels not unpacked under /work/wheels/src")
def test_the_real_wheels_bisect_the_first_release_with_dflash():
    old, new = _read(WHEELS / "lmdeploy-0.17.0").facts_json(), _read(WHEELS / "lmdeploy-0.18.0").facts_json()
    assert old["draft_architectures"] == [] and "dflash" not in old["speculative_algorithms"]
    assert not [f for f in old["features"] if f not in ("auto_backend", "turbomind_ignores_draft", "tp_divides_heads",
                                                        "dtype_per_model")]
    assert new["draft_architectures"] == ["DFlashDraftModel"] and set(lmdeploy.FEATURES) == set(new["features"])
    assert "unknown" not in new and dict(release("lmdeploy", "0.18.0").facts) == new
