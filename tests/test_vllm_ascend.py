"""vllm-ascend, a platform of the vLLM backend: its facts from its source distributions (0.23.0 and 0.23.0.post1
bundled; 0.18.0 has no DFlash), DF360 (the draft classes its proposer asserts), Ascend launches found by their
image, and vllm-ascend #11374 read in its code."""

from __future__ import annotations

from pathlib import Path

import pytest

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.enginefacts import vllm_ascend
from dflash_compat.enginefacts.source import SourceTree
from dflash_compat.engines.registry import ENGINES, bundled_versions
from dflash_compat.engines.store import release
from dflash_compat.pipeline.launch import LaunchSettings, check_text
from tests.configs import draft, run_rule, target

FIXTURE = Path(__file__).parent / "fixtures" / "enginefacts" / "vllm_ascend"
SDIST = Path("/work/wheels")
ASCEND = CheckOptions(vllm_platform="ascend")


def test_the_fixture_is_read():
    sec = vllm_ascend.extract(SourceTree.open(FIXTURE))
    assert sec.data["draft_classes"] == ["DFlashQwen3ForCausalLM", "Eagle3LlamaForCausalLM"]
    assert sec.data["dflash_proposer"] == "AscendDflashProposer" and sec.data["features"] == []


def test_registered_as_a_platform_of_the_vllm_backend():
    info = ENGINES["vllm-ascend"]
    assert info.backends == ("vllm",) and info.first_dflash == "0.23.0" and info.predates_dflash("0.18.0")
    assert bundled_versions("vllm-ascend") == ("0.23.0", "0.23.0.post1")
    facts = release("vllm-ascend", "0.23.0.post1").facts
    assert "DFlashQwen3ForCausalLM" in facts["draft_classes"] and "keeps_reduced_draft_head" in facts["features"]


def test_df360_catches_a_dflash2_draft_on_ascend_only():
    d = draft(architectures=["DFlash2DraftModel"])
    [f] = run_rule("DF360", target(), d, options=ASCEND, backends=("vllm",))
    assert "AssertionError" in f.message and "vllm-ascend 0.23.0.post1" in f.message
    assert not run_rule("DF360", target(), d, backends=("vllm",))  # upstream vLLM on a GPU serves it
    assert not run_rule("DF360", target(), draft(), options=ASCEND, backends=("vllm",))


def test_an_ascend_image_launch_is_judged_with_the_ascend_platform(tmp_path):
    import json

    t, d = tmp_path / "t", tmp_path / "d"
    for folder, cfg in ((t, target()), (d, draft(architectures=["DFlash2DraftModel"]))):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
    text = (f"FROM quay.io/ascend/vllm-ascend:v0.23.0\nCMD vllm serve {t} --speculative-config "
            f"'{{\"method\": \"dflash\", \"model\": \"{d}\", \"num_speculative_tokens\": 15}}'\n")
    fr = check_text("Dockerfile", text, LaunchSettings())
    [lr] = fr.launches
    assert lr.launch.engine == "vllm" and "DF360" in {f.code for f in lr.report.findings}


@pytest.mark.skipif(not (SDIST / "vllm_ascend-0.23.0.post1.tar.gz").is_file(), reason="sdists not under /work/wheels")
def test_the_real_sdists_bisect_dflash_and_keep_the_reduced_head():
    def read(v):
        return vllm_ascend.extract(SourceTree.open(SDIST / f"vllm_ascend-{v}.tar.gz")).facts_json()

    assert read("0.18.0")["draft_classes"] == []
    new = read("0.23.0.post1")
    assert new == dict(release("vllm-ascend", "0.23.0.post1").facts)
    # vllm-ascend #11374 (it overwrote a reduced draft head that upstream vLLM keeps): in both released versions
    # with DFlash the proposer keeps the draft's own lm_head when it has a draft_id_to_target_id map
    assert "keeps_reduced_draft_head" in read("0.23.0")["features"] and "keeps_reduced_draft_head" in new["features"]
