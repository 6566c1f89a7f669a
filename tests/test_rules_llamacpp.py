"""DF8xx: llama.cpp (b11434) on GGUF pairs read directly and on safetensors pairs as the converter
will write them. Each rule: a catch case and a pass case."""

from __future__ import annotations

from pathlib import Path

import pytest

from dflash_compat.checker import RuleContext, run_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.pipeline.check import load_gguf_draft, load_gguf_target
from dflash_compat.resolve.refs import resolve
from dflash_compat.rules import RULES_BY_CODE
from tests.configs import DELETE, catches, draft, merge, run_rule, target
from tests.gguf_models import DELETE as GDELETE
from tests.gguf_models import TOKENS, draft_gguf, target_gguf

pytest.importorskip("gguf")

L = ("llama.cpp",)


def gguf_findings(code: str, t: Path, d: Path):
    ts = load_gguf_target(resolve(str(t), "target"))
    ds = load_gguf_draft(resolve(str(d), "draft"))
    return run_rules(RuleContext(target=ts, draft=ds, options=CheckOptions()), [RULES_BY_CODE[code]], L)


@pytest.fixture
def good(tmp_path):
    return target_gguf(tmp_path / "t.gguf"), draft_gguf(tmp_path / "d.gguf")


def test_good_gguf_pair_passes_every_llamacpp_rule(good):
    t, d = good
    for code in (c for c in RULES_BY_CODE if c.startswith("DF8")):
        assert gguf_findings(code, t, d) == [], code


def test_good_checkpoint_pair_passes_every_llamacpp_rule():
    for code in (c for c in RULES_BY_CODE if c.startswith("DF8")):
        assert not catches(code, target(), draft(), backends=L), code


# DF801 ---------------------------------------------------------------------------------------------

def test_df801_catches_a_target_whose_graph_has_no_layer_hook(tmp_path, good):
    t = target_gguf(tmp_path / "vl.gguf", arch="qwen3vl")
    [f] = gguf_findings("DF801", t, good[1])
    assert "'qwen3vl'" in f.message and "llama-graph.cpp:1413" in f.message
    [g] = run_rule("DF801", target(architectures=["Qwen3VLForConditionalGeneration"]), draft(), backends=L)
    assert "convert_hf_to_gguf.py maps Qwen3VLForConditionalGeneration" in g.message


def test_df801_passes_hooked_architectures(tmp_path, good):
    for arch in ("llama", "gemma4", "gpt-oss", "qwen35"):
        assert gguf_findings("DF801", target_gguf(tmp_path / f"{arch}.gguf", arch=arch), good[1]) == []


# DF802 / DF814 -------------------------------------------------------------------------------------

def test_df802_catches_a_class_the_converter_does_not_know():
    [f] = run_rule("DF802", target(architectures=["MyNewForCausalLM"]), draft(), backends=L)
    assert "MyNewForCausalLM" in f.message


def test_df802_passes_known_classes_and_gguf_targets(good):
    assert not catches("DF802", target(architectures=["LlamaForCausalLM"]), draft(), backends=L)
    assert gguf_findings("DF802", *good) == []


def test_df814_catches_a_draft_family_without_a_converter():
    d = merge(draft(), architectures=["Qwen3XPressModel"])
    [f] = run_rule("DF814", target(), d, backends=L)
    assert "DFlashDraftModel" in f.message and "Qwen3XPressModel" in f.message


def test_df814_passes_dflash_and_dflash2():
    assert not catches("DF814", target(), draft(architectures=["DFlash2DraftModel"]), backends=L)


# DF803 ---------------------------------------------------------------------------------------------

def test_df803_catches_the_last_layer_on_a_graph_without_the_last_slot():
    # HF id 35 of a 36-layer qwen3 -> llama.cpp slot 36, which qwen3's graph never fills
    [f] = run_rule("DF803", target(), draft(**{"dflash_config.target_layer_ids": [1, 9, 17, 25, 35]}), backends=L)
    assert "slot 36" in f.message and "layer input tensor is null" in f.message


def test_df803_catches_a_slot_past_n_layer(tmp_path, good):
    d = draft_gguf(tmp_path / "d7.gguf", layers=[2, 7])
    [f] = gguf_findings("DF803", good[0], d)
    assert "[7]" in f.message and "lid <= n_layer" in f.message


def test_df803_passes_the_last_slot_on_graphs_that_fill_it(tmp_path):
    t = target_gguf(tmp_path / "nh.gguf", arch="nemotron_h")
    d = draft_gguf(tmp_path / "d6.gguf", layers=[2, 6])
    assert gguf_findings("DF803", t, d) == []


# DF804 ---------------------------------------------------------------------------------------------

def test_df804_catches_a_gguf_without_target_layers(tmp_path, good):
    d = draft_gguf(tmp_path / "nl.gguf", layers=GDELETE)
    [f] = gguf_findings("DF804", good[0], d)
    assert "requires 'target_layers'" in f.message


def test_df804_catches_a_checkpoint_whose_ids_are_guessed():
    d = draft(**{"dflash_config.target_layer_ids": DELETE})
    [f] = run_rule("DF804", target(), d, backends=L)
    assert "guesses them from num_target_layers" in f.message


def test_df804_passes_explicit_ids(good):
    assert gguf_findings("DF804", *good) == []


# DF805 ---------------------------------------------------------------------------------------------

def test_df805_catches_unshifted_ids(tmp_path, good):
    [f] = gguf_findings("DF805", good[0], draft_gguf(tmp_path / "u.gguf", layers=[0, 4]))
    assert f.severity == "warning" and "one layer early" in f.message


def test_df805_catches_the_reference_default_ids_unshifted(tmp_path):
    t = target_gguf(tmp_path / "t36.gguf", n_layer=36)
    # build_target_layer_ids(36, 5) = [1, 9, 17, 25, 33]: the converter would have written [2, 10, 18, 26, 34]
    [f] = gguf_findings("DF805", t, draft_gguf(tmp_path / "d.gguf", layers=[1, 9, 17, 25, 33], fc_in=80))
    assert "reference's default HF ids" in f.message


def test_df805_passes_converted_ids(tmp_path, good):
    assert gguf_findings("DF805", *good) == []
    t = target_gguf(tmp_path / "t36.gguf", n_layer=36)
    assert gguf_findings("DF805", t, draft_gguf(tmp_path / "d.gguf", layers=[2, 10, 18, 26, 34], fc_in=80)) == []


# DF806 ---------------------------------------------------------------------------------------------

def test_df806_notes_the_default_block_size(tmp_path, good):
    [f] = gguf_findings("DF806", good[0], draft_gguf(tmp_path / "b.gguf", dflash__block_size=GDELETE))
    assert "uses 16" in f.message and "speculative.cpp:1040" in f.message
    [g] = run_rule("DF806", target(), draft(block_size=DELETE), backends=L)
    assert "writes dflash.block_size = 16" in g.message


def test_df806_passes_a_set_block_size(good):
    assert gguf_findings("DF806", *good) == []


# DF807 ---------------------------------------------------------------------------------------------

def test_df807_catches_a_missing_or_outside_mask(tmp_path, good):
    [f] = gguf_findings("DF807", good[0], draft_gguf(tmp_path / "m.gguf", tokenizer__ggml__mask_token_id=GDELETE))
    assert "uses -1" in f.message and "common/common.cpp:2225" in f.message
    [g] = gguf_findings("DF807", good[0], draft_gguf(tmp_path / "m2.gguf", tokenizer__ggml__mask_token_id=len(TOKENS)))
    assert "outside the draft's vocabulary" in g.message


def test_df807_catches_a_top_level_mask_the_converter_ignores():
    d = draft(mask_token_id=151669, **{"dflash_config.mask_token_id": DELETE})
    [f] = run_rule("DF807", target(), d, backends=L)
    assert "top-level mask_token_id 151669 is not read" in f.message


def test_df807_passes_a_nested_mask(good):
    assert gguf_findings("DF807", *good) == []
    assert not catches("DF807", target(), draft(), backends=L)


# DF808 ---------------------------------------------------------------------------------------------

def test_df808_catches_sample_from_anchor(tmp_path, good):
    [f] = run_rule("DF808", target(), draft(**{"dflash_config.sample_from_anchor": True}), backends=L)
    assert "standard layout" in f.message
    [g] = gguf_findings("DF808", good[0], draft_gguf(tmp_path / "a.gguf", dflash__sample_from_anchor=True))
    assert "DSpark drafts only" in g.message


def test_df808_passes_dspark_and_plain(tmp_path, good):
    d = draft_gguf(tmp_path / "ds.gguf", dflash__sample_from_anchor=True, tensors={"markov_w1.weight": (64, 4)})
    assert gguf_findings("DF808", good[0], d) == []
    assert gguf_findings("DF808", *good) == []


# DF809 ---------------------------------------------------------------------------------------------

def test_df809_catches_an_old_draft_for_an_mrope_target(tmp_path, good):
    t = target_gguf(tmp_path / "q35.gguf", arch="qwen35", **{"ARCH.rope.dimension_sections": [11, 11, 10, 0]})
    [f] = gguf_findings("DF809", t, good[1])
    assert "acceptance collapses" in f.message


def test_df809_passes_a_draft_with_sections(tmp_path):
    t = target_gguf(tmp_path / "q35.gguf", arch="qwen35", **{"ARCH.rope.dimension_sections": [11, 11, 10, 0]})
    d = draft_gguf(tmp_path / "d.gguf", **{"dflash__rope__dimension_sections": [4, 0, 0, 0]})
    assert gguf_findings("DF809", t, d) == []


# DF810 ---------------------------------------------------------------------------------------------

V2_TENSORS = {"selector_hidden.weight": (4, 16), "selector_predecessor.weight": (64, 4),
              "selector_successor.weight": (64, 4)}
V2_KEYS = {"dflash__conv_kernel_size": 4, "dflash__conv_group_size": 4, "dflash__selector_rank": 4,
           "dflash__selector_top_k": 2}


def test_df810_catches_a_dflash2_gguf_without_its_keys(tmp_path, good):
    d = draft_gguf(tmp_path / "v2.gguf", tensors=V2_TENSORS, **{**V2_KEYS, "dflash__selector_rank": GDELETE})
    [f] = gguf_findings("DF810", good[0], d)
    assert "dflash.selector_rank" in f.message and "missing conv/selector metadata" in f.message


def test_df810_catches_top_level_dflash2_keys():
    d = merge(draft(), architectures=["DFlash2DraftModel"], conv_kernel_size=4, conv_group_size=4, selector_rank=4,
              selector_top_k=2)
    [f] = run_rule("DF810", target(), d, backends=L)
    assert "at the top level are not read" in f.message


def test_df810_passes_complete_dflash2(tmp_path, good):
    assert gguf_findings("DF810", good[0], draft_gguf(tmp_path / "v2.gguf", tensors=V2_TENSORS, **V2_KEYS)) == []


# DF811 ---------------------------------------------------------------------------------------------

def test_df811_catches_unsupported_misspelt_and_unwritten_activations(tmp_path, good):
    [f] = gguf_findings("DF811", good[0], draft_gguf(tmp_path / "r.gguf", dflash__hidden_activation="relu"))
    assert f.severity == "error" and "unsupported DFlash hidden activation" in f.message
    [g] = gguf_findings("DF811", good[0], draft_gguf(tmp_path / "h.gguf", dflash__hidden_act="gelu"))
    assert g.severity == "warning" and "dflash.hidden_activation" in g.message
    [h] = run_rule("DF811", target(), draft(hidden_act="gelu_pytorch_tanh"), backends=L)
    assert "runs SiLU" in h.message


def test_df811_passes_supported_activations(tmp_path, good):
    assert gguf_findings("DF811", good[0], draft_gguf(tmp_path / "g.gguf", dflash__hidden_activation="gelu")) == []


# DF812 ---------------------------------------------------------------------------------------------

def test_df812_catches_another_vocabulary(tmp_path, good):
    other = [f"x{i}" for i in range(len(TOKENS))]
    [f] = gguf_findings("DF812", good[0], draft_gguf(tmp_path / "v.gguf", tokens=other))
    assert "same count (64) but different tokens" in f.message
    [g] = gguf_findings("DF812", good[0], draft_gguf(tmp_path / "v2.gguf", tokens=TOKENS[:32]))
    assert "32 draft tokens against 64" in g.message


def test_df812_passes_the_same_vocabulary(good):
    assert gguf_findings("DF812", *good) == []


# DF813 ---------------------------------------------------------------------------------------------

def test_df813_catches_an_fc_for_another_width(tmp_path, good):
    [f] = gguf_findings("DF813", good[0], draft_gguf(tmp_path / "w.gguf", fc_in=40))
    assert "fc.weight takes 40 inputs" in f.message and "2 x 16 = 32" in f.message


def test_df813_passes_matching_width(good):
    assert gguf_findings("DF813", *good) == []


def test_settings_file_selects_llamacpp_and_its_launch_option(tmp_path, good):
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    cfg = tmp_path / "dflash-check.toml"
    cfg.write_text('backends = ["llama.cpp"]\nspec-draft-n-max = 12\n')
    res = CliRunner().invoke(cli, [str(good[0]), "--draft", str(good[1]), "--config", str(cfg), "-f", "json"])
    doc = __import__("json").loads(res.output)
    assert res.exit_code == 0 and doc["backends"] == ["llama.cpp"]
    assert [f["code"] for f in doc["findings"]] == ["DF815"]
