"""llama.cpp b11434 run for real (slow): the demo pair converted by llama.cpp's own converter, served by
llama-server with DFlash losslessly, and every llama.cpp rule's catch case failing in llama.cpp the way
the rule says while `dflash-check check` reports it. Skips (with the build command) without a build;
DFLASH_LLAMACPP_BUILD / DFLASH_LLAMACPP_SRC say where it is (benchmarks/llamacpp_harness.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_llamacpp_demo as demo  # noqa: E402
import llamacpp_harness as h  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not h.available(), reason=f"no llama.cpp build; build it with: {h.BUILD_COMMAND}")]

TOKENS = 32


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    work = tmp_path_factory.mktemp("llamacpp")
    tgt, dft = work / "target.gguf", work / "draft.gguf"
    for model, out, tdir in ((demo.DEMO / "target", tgt, None), (demo.DEMO / "draft", dft, demo.DEMO / "target")):
        proc = h.convert(model, out, target_dir=tdir)
        assert proc.returncode == 0, proc.stderr[-2000:]
    prompts = h.demo_prompts(demo.DEMO / "target", demo.DEMO / "prompts.txt")[:3]
    return work, tgt, dft, prompts


@pytest.fixture(scope="module")
def good_run(pair):
    work, tgt, dft, prompts = pair
    return demo.run_server(tgt, dft, prompts, work, max_tokens=TOKENS)


def test_converter_output_passes_our_gguf_rules(pair):
    from dflash_compat.files.gguf_header import read_gguf_header

    work, tgt, dft, _ = pair
    assert read_gguf_header(dft).kv["dflash.target_layers"] == [2, 5]  # target_layer_ids [1, 4] + 1
    assert demo.check(tgt, dft) == {"exit": 0, "codes": []}


def test_dflash_output_equals_plain_greedy_and_drafts_are_accepted(pair, good_run):
    work, tgt, _, prompts = pair
    plain = demo.run_server(tgt, None, prompts, work, max_tokens=TOKENS)
    assert plain["n_errors"] == good_run["n_errors"] == 0
    assert good_run["outputs"] == plain["outputs"] and all(len(o) == TOKENS for o in plain["outputs"])
    m = good_run["metrics"]
    assert m["drafts"] > 0 and m["accepted"] > 0 and good_run["mean_acceptance"] > 2.5


FAILS = {  # rule -> how llama.cpp fails
    "DF801": "abort", "DF803-last": "abort", "DF803-past": "abort", "DF804": "load", "DF807": "abort",
    "DF810": "load", "DF811": "load",
}


@pytest.mark.parametrize("case", sorted(FAILS))
def test_catch_case_fails_in_llama_cpp_and_is_reported(pair, case):
    work, tgt, dft, prompts = pair
    t, d, _, n_max = demo._cases(work, tgt, dft)[case]
    res = demo.run_server(t, d, prompts[:1], work, n_max=n_max, max_tokens=8)
    how = FAILS[case]
    if how == "load":
        assert not res["started"] or res["exit_code"] not in (None, 0), res["log_tail"]
    elif how == "abort":
        assert res["aborted"] or not res["started"], res["log_tail"]
    found = demo.check(t, d)
    assert found["exit"] == 1 and any(c.startswith(case.split("-")[0] + " error") for c in found["codes"]), found


def test_unshifted_layers_run_silently_but_accept_less(pair, good_run):
    """HF ids [1, 4] written as dflash.target_layers: llama.cpp runs, reads every feature one layer early, and
    accepts less. DF805 cannot tell this list from a valid one (no 0, not the default ids): the check is silent."""
    work, tgt, dft, prompts = pair
    t, d, _, _ = demo._cases(work, tgt, dft)["DF805"]
    res = demo.run_server(t, d, prompts, work, max_tokens=TOKENS)
    assert res["n_errors"] == 0 and res["mean_acceptance"] < good_run["mean_acceptance"]
    assert demo.check(t, d)["codes"] == []


def test_vocabulary_metadata_alone_changes_nothing_in_llama_cpp(pair):
    """DF812 warns; llama.cpp runs the draft with the target's embeddings and head, so a reversed draft
    vocabulary (same count) gives the same acceptance as the right one."""
    work, tgt, dft, prompts = pair
    t, d, _, _ = demo._cases(work, tgt, dft)["DF812"]
    good = demo.run_server(tgt, dft, prompts[:2], work, max_tokens=TOKENS)
    res = demo.run_server(t, d, prompts[:2], work, max_tokens=TOKENS)
    assert res["n_errors"] == 0 and res["mean_acceptance"] == good["mean_acceptance"]
    assert "DF812 warning" in demo.check(t, d)["codes"]


def test_draft_length_past_the_block_is_clamped(pair):
    work, tgt, dft, prompts = pair
    res = demo.run_server(tgt, dft, prompts[:1], work, n_max=12, max_tokens=8)
    assert any("clamping to 7" in ln for ln in res["log_tail"]), res["log_tail"]
    assert "DF815 info" in demo.check(tgt, dft, "--spec-draft-n-max", "12")["codes"]
