"""DF1xx: the common draft/target contract, decided from the two config.json files."""

import json
import math
from pathlib import Path

import pytest

from dflash_compat.checker import BACKENDS
from tests.configs import DELETE, catches, draft, fixture_config, merge, run_rule, speculators_draft, target

IDS = "dflash_config.target_layer_ids"
FAMILIES = Path(__file__).resolve().parent / "fixtures" / "families"
QWEN35 = fixture_config("pairs/qwen3.5-35b-a3b/target"), fixture_config("pairs/qwen3.5-35b-a3b/draft")
LLAMA31 = fixture_config("pairs/llama-3.1-8b/target"), fixture_config("pairs/llama-3.1-8b/draft")


def keys(findings):
    return [[loc.key for loc in f.locations] for f in findings]


def per_backend(findings):
    return {f.backend: f.severity for f in findings}


# --- DF103 layer ids missing
def test_df103_catches_no_ids_and_no_depth_per_engine():
    found = run_rule("DF103", target(), draft(num_target_layers=DELETE, **{IDS: DELETE}))
    # the reference cannot build the draft, vLLM fails on fc's width, SGLang guesses silently; MLX is DF501's
    assert per_backend(found) == {"dflash": "error", "vllm": "error", "sglang": "warning"}
    assert all(keys([f]) == [[IDS, "num_target_layers"]] for f in found)
    by = {f.backend: f.message for f in found}
    assert "AttributeError" in by["dflash"] and "EAGLE-3" in by["vllm"] and "running target" in by["sglang"]


def test_df103_catches_speculators_draft_without_aux_ids_for_vllm_only():
    found = run_rule("DF103", target(), speculators_draft(aux_hidden_state_layer_ids=DELETE))
    assert per_backend(found) == {"vllm": "error"} and "KeyError" in found[0].message


def test_df103_passes_explicit_or_derivable_ids():
    assert not catches("DF103", target(), draft())
    assert not catches("DF103", target(), draft(**{IDS: DELETE}))
    assert not catches("DF103", *QWEN35)


# --- DF104 layer id out of range
@pytest.mark.parametrize("ids, text", [([1, 9, 36], "does not exist"), ([-1, 9], "negative"), ([1, "9"], "not an integer"),
                                        ([1, True], "not an integer")])
def test_df104_catches_bad_ids(ids, text):
    [f] = run_rule("DF104", target(), draft(**{IDS: ids}))
    assert text in f.message


def test_df104_mentions_the_target_depth():
    [f] = run_rule("DF104", target(num_hidden_layers=28), draft())
    assert "33" in f.message and "28 decoder layers" in f.message
    assert keys([f]) == [[IDS, "num_hidden_layers"]]


def test_df104_passes_valid_ids_and_last_layer():
    assert not catches("DF104", target(), draft())
    assert not catches("DF104", target(), draft(**{IDS: [1, 35]}))  # N-1 is DF107's


# --- DF105 / DF106 ids duplicated, empty, unordered
def test_df105_catches_duplicates_and_empty():
    [f] = run_rule("DF105", target(), draft(**{IDS: [1, 9, 9, 25]}))
    assert "repeat 9" in f.message
    assert catches("DF105", target(), draft(**{IDS: []}))


def test_df105_passes_unique_ids():
    assert not catches("DF105", target(), draft())


def test_df106_catches_unsorted_ids():
    [f] = run_rule("DF106", target(), draft(**{IDS: [33, 1, 9, 17, 25]}))
    assert "[1, 9, 17, 25, 33]" in f.message


def test_df106_passes_increasing_ids():
    assert not catches("DF106", target(), draft())


# --- DF107 last layer
def test_df107_catches_last_layer_id_for_the_engines_that_differ():
    found = run_rule("DF107", target(), draft(**{IDS: [1, 12, 24, 35]}))
    assert per_backend(found) == {"transformers": "warning", "dflash": "warning", "vllm": "warning",
                                  "mlx": "warning"}  # SGLang: own rule
    assert "35" in found[0].message and "36" in found[0].message and "final norm" in found[0].message


def test_df107_passes_up_to_n_minus_2():
    assert not catches("DF107", target(), draft(**{IDS: [1, 12, 24, 34]}))
    assert not catches("DF107", *LLAMA31)


# --- DF108 num_target_layers mismatch
def test_df108_warns_when_ids_are_explicit():
    [f] = run_rule("DF108", target(num_hidden_layers=32), draft(**{IDS: [1, 9, 17, 25]}))
    assert f.severity == "warning" and "36 != target num_hidden_layers 32" in f.message


def test_df108_errors_when_ids_were_derived_from_it():
    [f] = run_rule("DF108", target(num_hidden_layers=32), draft(**{IDS: DELETE}))
    assert f.severity == "error" and "derived" in f.message


def test_df108_passes_matching_or_absent_depth():
    assert not catches("DF108", target(), draft())
    assert not catches("DF108", target(num_hidden_layers=32), draft(num_target_layers=DELETE))


# --- DF109 guessed ids
def test_df109_catches_guessed_ids_per_engine():
    found = run_rule("DF109", target(), draft(**{IDS: DELETE}))
    assert per_backend(found) == {"dflash": "warning", "vllm": "error", "sglang": "warning"}
    by = {f.backend: f.message for f in found}
    assert "[1, 9, 17, 25, 33]" in by["dflash"]
    # vLLM's EAGLE-3 defaults (2, 18, 33) in its numbering are these z-lab ids; fc wants 5 features
    assert "[1, 17, 32]" in by["vllm"] and "5 features" in by["vllm"]


def test_df109_vllm_runs_a_three_layer_draft_on_other_layers():
    found = run_rule("DF109", target(), draft(num_hidden_layers=3, **{IDS: DELETE}))
    assert per_backend(found)["vllm"] == "warning"


def test_df109_sglang_guesses_from_the_running_target():
    # Qwen3-8B's draft (num_target_layers 36) on Llama-3.1-8B's 32 layers
    found = run_rule("DF109", LLAMA31[0], draft(**{IDS: DELETE}))
    sglang = next(f for f in found if f.backend == "sglang")
    assert "32 layers" in sglang.message and "[1, 8, 15, 22, 29]" in sglang.message


def test_df109_passes_explicit_ids():
    assert not catches("DF109", target(), draft())
    assert not catches("DF109", *LLAMA31)


# --- DF110 vocab
def test_df110_catches_vocab_mismatch():
    # a draft vocabulary smaller than the target's: an error everywhere (llama.cpp's converter stops too)
    found = run_rule("DF110", target(vocab_size=152064), draft())
    assert {f.backend for f in found} == set(BACKENDS) and {f.severity for f in found} == {"error"}
    assert all("151936" in f.message and "152064" in f.message for f in found)


def test_df110_a_larger_draft_vocabulary_is_not_a_llamacpp_error():
    # llama.cpp drafts with the target's embeddings and head (b11434 src/models/dflash.cpp:684, :809) and the
    # converter pads the target's tokenizer to the draft's vocab_size: it runs (issue #36, the demo pair)
    found = {f.backend: f for f in run_rule("DF110", target(vocab_size=151643), draft())}
    assert set(found) == set(BACKENDS)
    assert {b: f.severity for b, f in found.items() if b != "llama.cpp"} == {b: "error" for b in BACKENDS
                                                                            if b != "llama.cpp"}
    llama = found["llama.cpp"]
    assert llama.severity == "warning" and "llama.cpp b11434 src/models/dflash.cpp:684" in llama.message
    assert "conversion/base.py:1590" in llama.message


def test_df110_passes_equal_or_unknown_vocab():
    assert not catches("DF110", target(), draft())
    assert not catches("DF110", target(), draft(vocab_size=DELETE))


# --- DF111..DF114 mask token
def test_df111_catches_missing_mask_and_suggests_the_tokenizer_one():
    tok = {"mask_token": "<|mask|>", "added_tokens_decoder": {"151669": {"content": "<|mask|>"}}}
    found = run_rule("DF111", target(), draft(**{"dflash_config.mask_token_id": DELETE}), tokenizer_config=tok)
    assert per_backend(found) == {"dflash": "error", "vllm": "error", "mlx": "error", "sglang": "warning"}
    f = next(x for x in found if x.backend == "vllm")
    assert "151669" in f.message and keys([f]) == [["dflash_config.mask_token_id"]]
    # SGLang looks up <|MASK|> (its default), not this tokenizer's <|mask|>: it may add a new token
    assert "adds the token" in next(x for x in found if x.backend == "sglang").message


def test_df111_sglang_resolves_the_tokenizer_mask_token():
    tok = {"mask_token": "<|MASK|>", "added_tokens_decoder": {"151669": {"content": "<|MASK|>"}}}
    found = run_rule("DF111", target(), draft(**{"dflash_config.mask_token_id": DELETE}), tokenizer_config=tok)
    sglang = next(x for x in found if x.backend == "sglang")
    assert sglang.severity == "info" and "id 151669" in sglang.message
    # the name SGLang looks up can be set in the draft config (dflash_config.mask_token, else top-level mask_token)
    tok = {"mask_token": "<|mask|>", "added_tokens_decoder": {"151669": {"content": "<|mask|>"}}}
    named = draft(mask_token="<|mask|>", **{"dflash_config.mask_token_id": DELETE})
    found = run_rule("DF111", target(), named, tokenizer_config=tok)
    assert next(x for x in found if x.backend == "sglang").severity == "info"


def test_df111_passes_top_level_or_nested_mask():
    assert not catches("DF111", target(), draft())
    assert not catches("DF111", target(), draft(**{"dflash_config.mask_token_id": DELETE}, mask_token_id=151669))


def test_df112_catches_mask_past_the_vocab_and_negative():
    [f] = run_rule("DF112", target(vocab_size=128256), draft())
    assert "151669" in f.message and "128256" in f.message
    assert catches("DF112", target(), draft(**{"dflash_config.mask_token_id": -1}))


def test_df112_passes_mask_inside_vocab():
    assert not catches("DF112", target(), draft())


@pytest.mark.parametrize("mask, role", [(151645, "eos"), (151643, "bos"), (151654, "pad")])
def test_df113_catches_mask_equal_to_special_token(mask, role):
    f = run_rule("DF113", target(pad_token_id=151654), draft(**{"dflash_config.mask_token_id": mask}))
    assert [x for x in f if f"{role} token" in x.message]


def test_df113_catches_eos_from_generation_config():
    [f] = run_rule("DF113", target(eos_token_id=DELETE), draft(**{"dflash_config.mask_token_id": 151650}),
                   generation_config={"eos_token_id": [151645, 151650]})
    assert f.locations[1].file == "generation_config.json"
    # the config has its own EOS too: the finding still points at the file that holds the mask's id
    [f] = run_rule("DF113", target(), draft(**{"dflash_config.mask_token_id": 151650}),
                   generation_config={"eos_token_id": [151645, 151650]})
    assert (f.locations[1].file, f.locations[1].key) == ("generation_config.json", "eos_token_id")


def test_df113_passes_reserved_mask():
    assert not catches("DF113", target(), draft())


def test_df114_catches_two_mask_ids():
    [f] = run_rule("DF114", target(), draft(mask_token_id=151643))
    assert "151643" in f.message and "151669" in f.message and f.severity == "warning"
    assert "generate(speculation_type='dflash')" in f.message  # the one reader of the top-level id
    assert sorted(keys([f])[0]) == ["dflash_config.mask_token_id", "mask_token_id"]


def test_df114_passes_one_or_agreeing_locations():
    assert not catches("DF114", target(), draft())
    assert not catches("DF114", target(), draft(mask_token_id=151669))


# --- DF115 / DF116 block size
def test_df115_catches_block_of_one():
    [f] = run_rule("DF115", target(), draft(block_size=1))
    assert f.severity == "error" and "block_size 1" in f.message


def test_df115_warns_on_huge_and_informs_on_absent():
    [big] = run_rule("DF115", target(), draft(block_size=128))
    assert big.severity == "warning"
    [absent] = run_rule("DF115", target(), draft(block_size=DELETE))
    assert absent.severity == "info" and "16" in absent.message


def test_df115_catches_a_block_longer_than_the_context():
    [f] = run_rule("DF115", target(), draft(block_size=10**9))
    assert f.severity == "error" and "max_position_embeddings 40960" in f.message and "target's" in f.message
    [f] = run_rule("DF115", target(max_position_embeddings=DELETE), draft(block_size=10**9))
    assert f.severity == "error" and "draft's context" in f.message  # the draft's own limit when the target has none


def test_df115_passes_a_large_block_within_the_context():
    [f] = run_rule("DF115", target(), draft(block_size=40960))
    assert f.severity == "warning"  # unusual, not impossible


def test_df115_passes_usual_block():
    assert not catches("DF115", target(), draft())


def test_df116_catches_two_block_sizes():
    [f] = run_rule("DF116", target(), draft(**{"dflash_config.block_size": 8}))
    assert "block_size=16" in f.message and "dflash_config.block_size=8" in f.message and f.severity == "warning"
    assert "use 8" in f.message and "speculators converter" in f.message


def test_df116_passes_one_location():
    assert not catches("DF116", target(), draft())
    assert not catches("DF116", target(), draft(**{"dflash_config.block_size": 16}))


# --- DF117 / DF118 RoPE
def test_df117_catches_theta_mismatch():
    [f] = run_rule("DF117", target(), draft(rope_theta=10000))
    assert "10000" in f.message and "1e+06" in f.message


def test_df117_catches_missing_draft_theta_as_the_qwen3_default():
    [f] = run_rule("DF117", target(), draft(rope_theta=DELETE))
    assert "default 10000" in f.message and f.locations[0].key == "rope_theta"


def test_df117_passes_equal_theta_in_either_layout():
    assert not catches("DF117", target(), draft())
    rope = {"rope_type": "default", "rope_theta": 1000000.0}
    assert not catches("DF117", target(), draft(rope_theta=DELETE, rope_parameters=rope))
    assert not catches("DF117", target(rope_theta=DELETE), draft())  # target theta unknown


def test_df118_catches_dropped_yarn_and_other_factor():
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    [f] = run_rule("DF118", target(rope_scaling=yarn), draft())
    assert "'default' != target 'yarn'" in f.message
    [g] = run_rule("DF118", target(rope_scaling=yarn), draft(rope_scaling=dict(yarn, factor=2.0)))
    assert "factor 2.0" in g.message


def test_df118_catches_dropped_llama3_scaling_on_the_published_llama_pair():
    llama_target, llama_draft = LLAMA31
    [f] = run_rule("DF118", llama_target, dict(llama_draft, rope_scaling=None))
    assert "'default' != target 'llama3'" in f.message


def test_df118_leaves_the_rotation_layout_to_df127():
    # a target's interleaved layout does not bind the draft: its own keys decide (vLLM's qwen3_dflash says so too)
    assert not catches("DF118", target(rope_interleave=True), draft())


def test_df118_passes_same_settings_and_mrope():
    assert not catches("DF118", target(), draft())
    mrope = {"type": "mrope", "mrope_section": [16, 24, 24]}
    assert not catches("DF118", target(rope_scaling=mrope), draft())  # DF125's business
    assert not catches("DF118", target(partial_rotary_factor=0.25), draft())  # Qwen3.5 drafts rotate fully
    assert not catches("DF118", *LLAMA31)
    assert not catches("DF118", *QWEN35)


# --- DF119 / DF120 draft layers
def test_df119_catches_length_unknown_type_and_missing_window():
    bad = run_rule("DF119", target(), draft(layer_types=["sliding_attention", "moe_attention"]))
    msgs = " | ".join(f.message for f in bad)
    assert len(bad) == 3 and "2 entries for 5 layers" in msgs and "'moe_attention'" in msgs and "sliding_window" in msgs


def test_df119_passes_valid_layer_types():
    ok = ["sliding_attention"] * 4 + ["full_attention"]
    assert not catches("DF119", target(), draft(layer_types=ok, sliding_window=2048))
    assert not catches("DF119", target(), draft())


def test_df120_catches_gelu():
    [f] = run_rule("DF120", target(), draft(hidden_act="gelu_pytorch_tanh"))
    assert "gelu_pytorch_tanh" in f.message


def test_df120_passes_silu_or_absent():
    assert not catches("DF120", target(), draft())
    assert not catches("DF120", target(), draft(hidden_act=DELETE))


# --- DF121 Gemma-style scaling
GEMMA2 = dict(architectures=["Gemma2ForCausalLM"], model_type="gemma2", hidden_size=3584, final_logit_softcapping=30.0)


def test_df121_catches_missing_embedding_scale_and_softcap():
    found = run_rule("DF121", target(**GEMMA2), draft(hidden_size=3584))
    assert len(found) == 2 and all(f.severity == "error" for f in found)
    assert any(f"{math.sqrt(3584):g}" in f.message for f in found)


def test_df121_warns_on_a_different_softcap():
    cfg = draft(hidden_size=3584, **{"dflash_config.input_embedding_scale": math.sqrt(3584),
                                     "dflash_config.final_logit_softcapping": 50.0})
    [f] = run_rule("DF121", target(**GEMMA2), cfg)
    assert f.severity == "warning" and "50" in f.message and "30" in f.message


def test_df121_catches_granite_multipliers():
    found = run_rule("DF121", target(model_type="granite", embedding_multiplier=12.0, logits_scaling=16.0), draft())
    assert {f.locations[0].key for f in found} == {"dflash_config.input_embedding_scale", "dflash_config.output_multiplier"}


def test_df121_passes_matching_draft_and_plain_target():
    cfg = draft(hidden_size=3584, **{"dflash_config.input_embedding_scale": math.sqrt(3584),
                                     "dflash_config.final_logit_softcapping": 30.0})
    assert not catches("DF121", target(**GEMMA2), cfg)
    assert not catches("DF121", target(), draft())


def test_df121_judges_the_logit_keys_only_where_a_loader_reads_them():
    # DFlash2-Beam / MiniMax DFlash2: SGLang soft-caps their candidate logits, but no engine reads the embedding key
    found = run_rule("DF121", target(**GEMMA2), draft(hidden_size=3584, architectures=["DFlash2BeamDraftModel"]))
    assert [f.locations[0].key for f in found] == ["dflash_config.final_logit_softcapping"]


def test_df121_passes_the_muse_glimmer_assistant_whose_logits_are_the_target_heads():
    muse, assistant = (json.loads((FAMILIES / name).read_text())
                       for name in ("muse-glimmer-target-config.json", "assistant-config.json"))
    assert muse["text_config"]["final_logit_softcapping"] and not catches("DF121", muse, assistant)
    assert not catches("DF121", target(**GEMMA2), speculators_draft(hidden_size=3584))
    # the same target with a z-lab draft is still judged
    assert catches("DF121", muse, draft(hidden_size=assistant["hidden_size"]))


# --- DF122 / DF123 quantisation
def test_df122_catches_quantised_head():
    q = {"quant_method": "compressed-tensors", "ignore": []}
    [f] = run_rule("DF122", target(quantization_config=q), draft())
    assert "compressed-tensors" in f.message and f.locations[0].key == "quantization_config.ignore"


def test_df122_passes_head_kept_in_full_precision():
    assert not catches("DF122", target(quantization_config={"quant_method": "compressed-tensors", "ignore": ["lm_head"]}), draft())
    assert not catches("DF122", target(quantization_config={"quant_method": "awq", "bits": 4}), draft())
    assert not catches("DF122", target(), draft())


def test_df123_catches_quantised_draft():
    [f] = run_rule("DF123", target(), draft(quantization_config={"quant_method": "fp8"}))
    assert "fp8" in f.message


def test_df123_passes_bf16_draft():
    assert not catches("DF123", target(), draft())


# --- DF124 speculators verifier
SPEC = speculators_draft()


def test_df124_catches_other_hidden_size_and_verifier():
    found = run_rule("DF124", target(hidden_size=5120, architectures=["LlamaForCausalLM"]), SPEC)
    assert sorted(f.severity for f in found) == ["error", "warning"]
    assert any("Qwen/Qwen3-8B" in f.message for f in found)


def test_df124_reads_aux_ids_as_vllm_captures_them():
    # vLLM captures aux id L after decoder layer L-1 and sets dflash_config.target_layer_ids = aux - 1 (no
    # second shift): aux 36 on a 36-layer target is the last layer, as DF107 reports for z-lab id 35
    spec = speculators_draft(aux_hidden_state_layer_ids=[2, 13, 25, 36])
    [f] = [x for x in run_rule("DF107", target(), spec) if x.backend == "vllm"]
    assert "target layer id 35" in f.message
    assert not catches("DF104", target(), spec)


def test_df124_passes_matching_verifier_and_zlab_drafts():
    assert not catches("DF124", target(), SPEC)
    assert not catches("DF124", target(hidden_size=5120), draft())


# --- DF125 mrope target
def test_df125_informs_about_mrope_target():
    vl = target(rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20]})
    [f] = run_rule("DF125", vl, draft())
    assert f.severity == "info" and "[24, 20, 20]" in f.message


def test_df125_passes_plain_rope_target():
    assert not catches("DF125", target(), draft())


# --- DF126 per-engine embedding / logit scaling
GEMMA3 = fixture_config("gemma-3-27b-it")
GEMMA_SCALE = math.sqrt(5376)
# A Qwen3-style draft sized for Gemma-3-27B (hidden 5376, vocab 262144) that mirrors its embedding scale.
GEMMA_DRAFT = draft(hidden_size=5376, vocab_size=262144, num_target_layers=62, num_attention_heads=32,
                    **{IDS: [1, 15, 30, 45, 59], "dflash_config.mask_token_id": 262143,
                       "dflash_config.input_embedding_scale": GEMMA_SCALE})
DFLASH2 = fixture_config("dflash2-draft")
DFLASH2_TARGET = target(hidden_size=6656, num_hidden_layers=52, vocab_size=202048)


def test_df126_vllm_v1_drops_the_gemma_embedding_scale():
    found = run_rule("DF126", GEMMA3, GEMMA_DRAFT)
    # SGLang's Gemma 3 module is already scaled, mlx-lm's gemma3 scales inline: only vLLM's v1 model differs
    assert per_backend(found) == {"vllm": "warning"}
    assert f"block embedding scale 1 where the dflash reference uses {GEMMA_SCALE:g}" in found[0].message
    assert keys(found) == [["dflash_config.input_embedding_scale"]]


def test_df126_sglang_and_mlx_scale_by_the_target_when_the_draft_does_not():
    plain = merge(GEMMA_DRAFT, **{"dflash_config.input_embedding_scale": DELETE})
    assert per_backend(run_rule("DF126", GEMMA3, plain)) == {"sglang": "warning"}
    gemma4 = merge(GEMMA3, model_type="gemma4", **{"text_config.model_type": "gemma4_text"})
    found = {f.backend: f.message for f in run_rule("DF126", gemma4, GEMMA_DRAFT)}
    assert set(found) == {"vllm", "mlx"}  # MLX: embed_scale attribute x the key
    assert f"{GEMMA_SCALE * GEMMA_SCALE:g}" in found["mlx"]


def test_df126_top_level_scale_is_read_by_the_reference_only():
    found = run_rule("DF126", target(), draft(input_embedding_scale=2.0))
    assert per_backend(found) == {"vllm": "warning", "sglang": "warning", "mlx": "warning"}


def test_df126_logit_scaling_of_a_v1_draft_is_informational():
    v1 = merge(DFLASH2, architectures=["DFlashDraftModel"], **{f"dflash_config.{k}": DELETE for k in (
        "conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")})
    found = run_rule("DF126", DFLASH2_TARGET, v1)
    assert per_backend(found) == {"vllm": "info", "sglang": "info"}
    assert "greedy argmax is unchanged" in found[0].message


def test_df126_passes_the_published_dflash2_draft_and_plain_pairs():
    assert not catches("DF126", DFLASH2_TARGET, DFLASH2)  # every engine reads its nested multiplier / soft-cap
    assert not catches("DF126", target(), draft())
    assert not catches("DF126", *QWEN35)
    dflash2_gemma = merge(GEMMA_DRAFT, architectures=["DFlash2DraftModel"])
    assert not catches("DF126", GEMMA3, dflash2_gemma)  # vLLM's DFlash 2 model reads the key


# --- DF127 RoPE layout keys in the draft config
def test_df127_catches_a_copied_partial_rotary_factor_on_the_qwen35_draft():
    qwen35_target, qwen35_draft = QWEN35
    [f] = run_rule("DF127", qwen35_target, dict(qwen35_draft, partial_rotary_factor=0.25))
    assert f.backend == "common" and f.severity == "warning"
    assert "vLLM rotates 32 of 128 head dims" in f.message and keys([f]) == [["partial_rotary_factor"]]


def test_df127_catches_interleaved_layout_and_rope_dim():
    [f] = run_rule("DF127", target(), draft(is_neox_style=False, rope_parameters={"rope_type": "default",
                                                                                  "rope_theta": 1e6, "rope_dim": 64}))
    assert "is_neox_style=false" in f.message and "rope_parameters.rope_dim=64" in f.message
    [g] = run_rule("DF127", target(), draft(rope_is_neox_style=False))
    assert "SGLang rotate interleaved" in g.message


def test_df127_passes_published_drafts_and_neutral_keys():
    assert not catches("DF127", *QWEN35)
    assert not catches("DF127", target(), draft())
    assert not catches("DF127", target(), draft(is_neox_style=True, partial_rotary_factor=1.0))
    assert not catches("DF127", target(), DFLASH2)


# --- DF128 speculators converter and id N-1
def test_df128_catches_a_last_layer_id():
    [f] = run_rule("DF128", target(), draft(**{IDS: [1, 12, 24, 35]}))
    assert f.backend == "vllm" and f.severity == "info"
    assert "[2, 13, 25]" in f.message and "3 features" in f.message and "has 4" in f.message


def test_df128_passes_published_pairs_and_speculators_drafts():
    assert not catches("DF128", target(), draft())
    assert not catches("DF128", *LLAMA31)
    assert not catches("DF128", target(), speculators_draft(aux_hidden_state_layer_ids=[2, 10, 18, 26, 36]))


def test_df127_and_df502_agree_with_transformers():
    """The reference side of both rules, checked against transformers itself: Qwen3's default RoPE rotates the
    whole head whatever partial_rotary_factor says, and the theta inside rope_parameters beats the top-level one."""
    pytest.importorskip("torch")
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

    sizes = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 intermediate_size=128, vocab_size=100)
    partial = Qwen3Config(**sizes, rope_theta=1e6, partial_rotary_factor=0.25)
    assert catches("DF127", target(), draft(partial_rotary_factor=0.25))
    assert Qwen3RotaryEmbedding(partial).inv_freq.shape[0] == 16 // 2  # full head_dim / 2 frequencies
    both = Qwen3Config(**sizes, rope_theta=1e6, rope_parameters={"rope_type": "default", "rope_theta": 1e7})
    assert both.rope_parameters["rope_theta"] == 1e7


# --- DF129 DFlash 2 keys for the reference and the MLX port
V2 = {"architectures": ["DFlash2DraftModel"], "dflash_config.conv_kernel_size": 3, "dflash_config.conv_group_size": 8,
      "dflash_config.selector_rank": 4, "dflash_config.selector_top_k": 6}


def test_df129_catches_missing_keys_and_an_odd_group():
    found = run_rule("DF129", target(), draft(**dict(V2, **{"dflash_config.selector_top_k": DELETE})))
    assert {f.backend for f in found} == {"dflash", "mlx"} and "selector_top_k" in found[0].message
    [f, _] = run_rule("DF129", target(), draft(**dict(V2, **{"dflash_config.conv_group_size": 7})))
    assert "does not divide hidden_size 4096" in f.message


def test_df129_passes_complete_v2_and_v1_drafts():
    assert not catches("DF129", target(), draft(**V2))
    assert not catches("DF129", target(), draft())  # v1 has no such keys


def test_df106_names_sglang_too():
    # SGLang 0.5.23 qwen3_5.py:1889-1892 marks the layers, 1942-1953 collects them in layer order.
    [f] = run_rule("DF106", target(), draft(**{IDS: [33, 1, 9, 17, 25]}))
    assert "vLLM and SGLang" in f.message and "Qwen3.5" in f.message
