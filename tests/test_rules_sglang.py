"""DF4xx: SGLang's DFLASH algorithm: flags, model-class support, layer ids, mask token, quantisation."""

import copy

from dflash_compat.deployment.options import CheckOptions
from tests.configs import DELETE, catches, draft, fixture_config, merge, run_rule, target

S = ("sglang",)
QUANT_HEAD = {"quant_method": "compressed-tensors", "ignore": []}
DFLASH2 = fixture_config("dflash2-draft")  # z-lab's published DFlash 2 draft config (hidden 6656)
QWEN35 = fixture_config("qwen3.5-35b-a3b")  # Qwen3_5MoeForConditionalGeneration, 40 layers
QWEN35_DRAFT = fixture_config("pairs/qwen3.5-35b-a3b/draft")  # ids [1, 10, 19, 28, 37]
LLAMA31 = fixture_config("pairs/llama-3.1-8b/target")  # 32 layers
LLAMA31_DRAFT = fixture_config("pairs/llama-3.1-8b/draft")  # ids [1, 8, 15, 22, 29]
IDS = "dflash_config.target_layer_ids"


def qwen35_text(arch="Qwen3_5MoeForCausalLM"):
    """The Qwen3.5-35B-A3B language model as a text-only checkpoint declares it (its text_config at the top)."""
    cfg = copy.deepcopy(QWEN35["text_config"])
    cfg["architectures"] = [arch]
    return cfg


def ids(cfg, new):
    return merge(cfg, **{"dflash_config.target_layer_ids": new})


def test_df401_catches_block_minus_one():
    [f] = run_rule("DF401", target(), draft(), options=CheckOptions(sglang_num_draft_tokens=15), backends=S)
    assert "counts the anchor" in f.message and f.backend == "sglang"


def test_df401_reads_the_block_size_flag_when_num_draft_tokens_is_absent():
    [f] = run_rule("DF401", target(), draft(), options=CheckOptions(sglang_dflash_block_size=8), backends=S)
    assert "--speculative-dflash-block-size 8" in f.message


def test_df401_passes_equal_or_absent_flag():
    assert not catches("DF401", target(), draft(), options=CheckOptions(sglang_num_draft_tokens=16), backends=S)
    assert not catches("DF401", target(), draft(), backends=S)


def test_df402_errors_on_listed_unsupported_and_warns_on_unknown():
    [f] = run_rule("DF402", target(architectures=["Qwen2ForCausalLM"]), draft(), backends=S)
    assert f.severity == "error" and "stops at start-up" in f.message
    [g] = run_rule("DF402", target(architectures=["FooForCausalLM"]), draft(), backends=S)
    assert g.severity == "warning"


def test_df402_passes_supported_class():
    assert not catches("DF402", target(), draft(), backends=S)
    assert not catches("DF402", LLAMA31, LLAMA31_DRAFT, backends=S)


QWEN3VL = fixture_config("pairs/qwen3-vl-8b/target")  # Qwen3VLForConditionalGeneration (dense), 36 layers
QWEN3VL_DRAFT = fixture_config("pairs/qwen3-vl-8b/draft")


def test_df402_catches_a_hook_handed_to_a_language_model_without_it():
    """Dense Qwen3-VL: the wrapper's hook calls Qwen3LLMModel's, which does not exist (qwen3_vl.py:1688)."""
    [f] = run_rule("DF402", QWEN3VL, QWEN3VL_DRAFT, backends=S)
    assert f.severity == "error" and "Qwen3LLMModel" in f.message and "AttributeError" in f.message


def test_df402_passes_wrappers_whose_language_model_has_the_hook():
    """Qwen3-VL-MoE (Qwen3MoeLLMModel has it, qwen3_moe.py:987) and Qwen3.5 (Qwen3_5MoeForCausalLM) work."""
    moe = merge(QWEN3VL, architectures=["Qwen3VLMoeForConditionalGeneration"], model_type="qwen3_vl_moe")
    assert not catches("DF402", moe, QWEN3VL_DRAFT, backends=S)
    assert not catches("DF402", QWEN35, QWEN35_DRAFT, backends=S)


def test_df405_catches_quantization_flag_without_a_draft_setting():
    [f] = run_rule("DF405", target(), draft(), options=CheckOptions(sglang_quantization="fp8"), backends=S)
    assert "fp8" in f.message and "--speculative-draft-model-quantization" in f.message


def test_df405_passes_without_the_flag_even_for_a_quantised_target():
    assert not catches("DF405", target(quantization_config={"quant_method": "fp8"}), draft(), backends=S)
    opts = CheckOptions(sglang_quantization="fp8", sglang_draft_quantization="unquant")
    assert not catches("DF405", target(), draft(), options=opts, backends=S)
    assert not catches("DF405", target(), draft(), options=CheckOptions(sglang_quantization="unquant"), backends=S)


def test_df406_catches_the_last_layer_and_unsorted_ids_on_qwen3_5_text_classes():
    [f] = run_rule("DF406", qwen35_text(), ids(QWEN35_DRAFT, [1, 10, 19, 28, 39]), backends=S)
    assert "[0, 39)" in f.message and "Qwen3_5MoeForCausalLM" in f.message
    [g] = run_rule("DF406", qwen35_text("Qwen3_5ForCausalLM"), ids(QWEN35_DRAFT, [10, 1, 19, 28, 37]), backends=S)
    assert "not unique and strictly increasing" in g.message


def test_df406_passes_published_ids_and_the_multimodal_classes():
    assert not catches("DF406", qwen35_text(), QWEN35_DRAFT, backends=S)
    assert not catches("DF406", QWEN35, ids(QWEN35_DRAFT, [10, 1, 19, 28, 39]), backends=S)  # DF407's class


def test_df407_catches_the_last_layer_per_sglang_class():
    [f] = run_rule("DF407", target(), draft(**{"dflash_config.target_layer_ids": [1, 9, 17, 25, 35]}), backends=S)
    assert "Qwen3ForCausalLM" in f.message and "feature dim mismatch" in f.message
    [g] = run_rule("DF407", LLAMA31, ids(LLAMA31_DRAFT, [1, 8, 15, 22, 31]), backends=S)
    assert "LlamaForCausalLM" in g.message
    [h] = run_rule("DF407", QWEN35, ids(QWEN35_DRAFT, [1, 10, 19, 28, 39]), backends=S)
    assert "IndexError" in h.message and "Qwen3_5MoeForConditionalGeneration" in h.message


def test_df407_passes_published_ids_unchecked_classes_and_qwen3_5_text():
    assert not catches("DF407", target(), draft(), backends=S)
    assert not catches("DF407", QWEN35, QWEN35_DRAFT, backends=S)
    last = draft(**{"dflash_config.target_layer_ids": [1, 9, 17, 25, 35]})
    assert not catches("DF407", target(architectures=["GptOssForCausalLM"]), last, backends=S)  # after the norm
    assert not catches("DF407", qwen35_text(), ids(QWEN35_DRAFT, [1, 10, 19, 28, 39]), backends=S)  # DF406's


MASK_TOK = {"mask_token": "<|MASK|>", "added_tokens_decoder": {"151670": {"content": "<|MASK|>", "special": True}}}


def test_df408_catches_a_mask_id_the_tokenizer_gives_another_row():
    [f] = run_rule("DF408", target(), draft(), backends=S, tokenizer_config=MASK_TOK)
    assert "151669 != 151670" in f.message and f.locations[1].file == "tokenizer_config.json"


def test_df408_passes_agreeing_ids_other_names_and_no_tokenizer_mask():
    agree = {"mask_token": "<|MASK|>", "added_tokens_decoder": {"151669": {"content": "<|MASK|>"}}}
    assert not catches("DF408", target(), draft(), backends=S, tokenizer_config=agree)
    named = draft(**{"dflash_config.mask_token": "<|DRAFT_MASK|>"})
    assert not catches("DF408", target(), named, backends=S, tokenizer_config=MASK_TOK)
    assert not catches("DF408", target(), draft(), backends=S)


def test_df409_catches_what_sglang_parses_and_refuses():
    half = merge(DFLASH2, **{"dflash_config.conv_group_size": DELETE})
    [f] = run_rule("DF409", target(), half, backends=S)
    assert "sets conv_kernel_size but not conv_group_size" in f.message
    top = merge(half, conv_group_size=16)
    assert "set only at the top level" in run_rule("DF409", target(), top, backends=S)[0].message
    assert catches("DF409", target(), merge(DFLASH2, **{"dflash_config.selector_top_k": 0}), backends=S)
    [g] = run_rule("DF409", target(), merge(DFLASH2, **{"dflash_config.output_multiplier": 0}), backends=S)
    assert "not positive" in g.message
    [h] = run_rule("DF409", target(), merge(DFLASH2, **{"dflash_config.conv_group_size": 48}), backends=S)
    assert "does not divide hidden_size 6656" in h.message
    no_selector = merge(DFLASH2, **{"dflash_config.selector_rank": DELETE, "dflash_config.selector_top_k": DELETE})
    assert "selector_rank" in run_rule("DF409", target(), no_selector, backends=S)[0].message


def test_df409_passes_the_published_dflash2_config_and_v1_drafts():
    assert not catches("DF409", target(), DFLASH2, backends=S)
    assert not catches("DF409", target(), draft(), backends=S)


def test_df410_catches_dp_attention_without_dp_lm_head():
    [f] = run_rule("DF410", target(), draft(), options=CheckOptions(sglang_attn_dp_size=8), backends=S)
    assert "--enable-dp-lm-head" in f.message


def test_df410_passes_with_the_flag_or_without_dp_attention():
    opts = CheckOptions(sglang_attn_dp_size=8, sglang_enable_dp_lm_head=True)
    assert not catches("DF410", target(), draft(), options=opts, backends=S)
    assert not catches("DF410", target(), draft(), options=CheckOptions(sglang_attn_dp_size=1), backends=S)


def test_df411_catches_pipeline_parallelism():
    assert catches("DF411", target(), draft(), options=CheckOptions(pp_size=2), backends=S)


def test_df411_passes_pp_1():
    assert not catches("DF411", target(), draft(), backends=S)
    assert not catches("DF411", target(), draft(), options=CheckOptions(pp_size=2), backends=("vllm",))


def test_df412_catches_disagreeing_block_flags():
    opts = CheckOptions(sglang_dflash_block_size=16, sglang_num_draft_tokens=15)
    assert catches("DF412", target(), draft(), options=opts, backends=S)


def test_df412_passes_equal_or_single_flags():
    opts = CheckOptions(sglang_dflash_block_size=16, sglang_num_draft_tokens=16)
    assert not catches("DF412", target(), draft(), options=opts, backends=S)
    assert not catches("DF412", target(), draft(), options=CheckOptions(sglang_dflash_block_size=16), backends=S)


def test_df413_catches_a_window_smaller_than_the_block():
    [f] = run_rule("DF413", target(), draft(), options=CheckOptions(sglang_draft_window_size=8), backends=S)
    assert "the draft's block_size 16" in f.message and f.locations[0].key == "block_size"
    opts = CheckOptions(sglang_draft_window_size=8, sglang_num_draft_tokens=12)
    assert "--speculative-num-draft-tokens 12" in run_rule("DF413", target(), draft(), options=opts, backends=S)[0].message


def test_df413_passes_a_window_of_at_least_one_block():
    assert not catches("DF413", target(), draft(), options=CheckOptions(sglang_draft_window_size=16), backends=S)
    opts = CheckOptions(sglang_draft_window_size=8, sglang_num_draft_tokens=8)
    assert not catches("DF413", target(), draft(), options=opts, backends=S)
    assert not catches("DF413", target(), draft(), backends=S)


def test_df406_df407_leave_guessed_ids_to_sglang():
    # no ids: SGLang derives them from the running target's depth (never N - 1); ours come from num_target_layers
    guessed = draft(num_target_layers=38, **{"dflash_config.target_layer_ids": DELETE})
    assert not catches("DF407", target(), guessed, backends=S)
    assert not catches("DF406", qwen35_text(), merge(guessed, num_target_layers=42), backends=S)


MODELOPT_FP8 = {"quant_method": "modelopt", "quant_algo": "FP8"}


def test_df404_notes_a_dflash2_draft_on_a_modelopt_head():
    # SGLang 0.5.23 logits_processor.py:1614-1663: ModelOpt FP8/NVFP4 heads only in their runtime layout.
    for quant in (MODELOPT_FP8, {"quant_method": "modelopt", "quant_algo": "NVFP4"}, {"quant_method": "modelopt_fp4"}):
        [f] = run_rule("DF404", target(quantization_config=quant), DFLASH2, backends=S)
        assert f.severity == "info" and "ModelOpt" in f.message and "runtime layout" in f.message


def test_df404_passes_other_quantised_heads_v1_drafts_and_kept_heads():
    # Any other method with a kernel is used as is (logits_processor.py:1663).
    assert not catches("DF404", target(quantization_config=QUANT_HEAD), DFLASH2, backends=S)
    assert not catches("DF404", target(quantization_config=MODELOPT_FP8), draft(), backends=S)
    kept = dict(MODELOPT_FP8, exclude_modules=["lm_head"])
    assert not catches("DF404", target(quantization_config=kept), DFLASH2, backends=S)


def test_df414_catches_a_quantised_head_at_tp_above_one():
    [f] = run_rule("DF414", target(quantization_config=QUANT_HEAD), draft(), options=CheckOptions(tp=4), backends=S)
    assert f.severity == "error" and "only supported at tp=1, got tp_size=4" in f.message
    [g] = run_rule("DF414", target(quantization_config=QUANT_HEAD), draft(), options=CheckOptions(tp=1, draft_tp=2),
                   backends=S)
    assert "tensor parallelism 2" in g.message


def test_df414_passes_tp1_dense_heads_and_drafts_with_their_own_head():
    assert not catches("DF414", target(quantization_config=QUANT_HEAD), draft(), backends=S)
    assert not catches("DF414", target(), draft(), options=CheckOptions(tp=4), backends=S)
    kept = dict(QUANT_HEAD, ignore=["lm_head"])
    assert not catches("DF414", target(quantization_config=kept), draft(), options=CheckOptions(tp=4), backends=S)
    assert not catches("DF414", target(quantization_config=QUANT_HEAD), DFLASH2, options=CheckOptions(tp=4),
                       backends=S)


# --- DF415-DF419: SGLang refusals (SGLang 0.5.23)
DOMINO = draft(**{"dflash_config.projector_type": "domino", "dflash_config.shift_label": True,
                  "dflash_config.pure_draft_prefix_len": 1, "dflash_config.gru_hidden_dim": 256,
                  "dflash_config.emb_dim": 256})
LILI = draft(architectures=["LiLiCorrDraftModel"], **{"dflash_config.lilicorr_num_layers": 2})


def test_df415_catches_domino_lilicorr_and_context_parallel_with_dp_attention():
    # dflash_worker_v2.py:455-460, speculative_hook.py:303-317.
    dp = CheckOptions(sglang_attn_dp_size=4, sglang_enable_dp_lm_head=True)
    for d in (DOMINO, LILI):
        [f] = run_rule("DF415", target(), d, options=dp, backends=S)
        assert "Domino and LiLiCorr heads are not supported" in f.message
    cp = CheckOptions(sglang_attn_dp_size=4, sglang_enable_dp_lm_head=True, sglang_attn_cp_size=2)
    [g] = run_rule("DF415", target(), draft(), options=cp, backends=S)
    assert "does not support context parallel" in g.message


def test_df415_passes_plain_drafts_and_no_dp_attention():
    dp = CheckOptions(sglang_attn_dp_size=4, sglang_enable_dp_lm_head=True, sglang_attn_cp_size=1)
    assert not catches("DF415", target(), draft(), options=dp, backends=S)
    assert not catches("DF415", target(), DFLASH2, options=dp, backends=S)
    assert not catches("DF415", target(), DOMINO, options=CheckOptions(sglang_attn_cp_size=2), backends=S)


def test_df416_catches_each_domino_refusal():
    # dflash_utils.py:727-789.
    cases = {"pure_draft_prefix_len": (2, "not 1"), "shift_label": ("yes", "not a bool"),
             "gru_hidden_dim": (DELETE, "gru_hidden_dim is missing"), "emb_dim": (0, "emb_dim is not a positive")}
    for key, (value, text) in cases.items():
        [f] = run_rule("DF416", target(), merge(DOMINO, **{f"dflash_config.{key}": value}), backends=S)
        assert text in f.message and f.locations[0].key == f"dflash_config.{key}", key
    [g] = run_rule("DF416", target(), merge(DOMINO, emb_dim=128), backends=S)
    assert "differs between dflash_config (256) and the top level (128)" in g.message


def test_df416_passes_a_complete_domino_config_and_top_level_keys():
    assert not catches("DF416", target(), DOMINO, backends=S)
    top = merge(DOMINO, **{"dflash_config.gru_hidden_dim": DELETE, "dflash_config.emb_dim": DELETE},
                gru_hidden_dim=256, emb_dim=256)
    assert not catches("DF416", target(), top, backends=S)
    assert not catches("DF416", target(), draft(), backends=S)


def test_df417_catches_mimo_extras_of_the_wrong_type():
    # dflash_utils.py:704-724.
    [f] = run_rule("DF417", target(), draft(**{"dflash_config.attention_sink_bias": "true"}), backends=S)
    assert "must be a bool" in f.message
    for bad in ("0.5", True):
        [g] = run_rule("DF417", target(), draft(**{"dflash_config.attention_value_scale": bad}), backends=S)
        assert "int|float|None" in g.message


def test_df417_passes_bools_numbers_and_absence():
    good = draft(**{"dflash_config.attention_sink_bias": True, "dflash_config.attention_value_scale": 0.5})
    assert not catches("DF417", target(), good, backends=S)
    assert not catches("DF417", target(), draft(**{"dflash_config.attention_value_scale": 2}), backends=S)
    assert not catches("DF417", target(), draft(), backends=S)


def test_df418_notes_the_trtllm_mha_fallback():
    # speculative_hook.py:945-979.
    opts = CheckOptions(sglang_draft_attention_backend="trtllm_mha")
    [f] = run_rule("DF418", target(), draft(), options=opts, backends=S)
    assert f.severity == "info" and "fallback" in f.message


def test_df418_passes_all_sliding_or_causal_drafts_and_other_backends():
    opts = CheckOptions(sglang_draft_attention_backend="trtllm_mha")
    assert not catches("DF418", target(), draft(layer_types=["sliding_attention"] * 5), options=opts, backends=S)
    assert not catches("DF418", target(), draft(is_causal=True), options=opts, backends=S)
    assert not catches("DF418", target(), draft(), options=CheckOptions(sglang_draft_attention_backend="fa3"),
                       backends=S)


def test_df419_catches_ids_beyond_the_loops_and_a_one_pass_depth():
    # spec_aux_hidden_state.py:232-234: target layers = num_hidden_layers x num_loops.
    loop = target(num_hidden_layers=22, num_loops=2)
    [f] = run_rule("DF419", loop, draft(num_target_layers=44, **{IDS: [1, 10, 20, 30, 44]}), backends=S)
    assert f.severity == "error" and "[44]" in f.message and "22 x num_loops 2 = 44" in f.message
    [g] = run_rule("DF419", loop, draft(num_target_layers=22, **{IDS: [1, 5, 10, 15, 20]}), backends=S)
    assert g.severity == "warning" and "num_target_layers 22" in g.message


def test_df419_passes_loop_ids_in_range_and_plain_targets():
    loop = target(num_hidden_layers=22, num_loops=2)
    assert not catches("DF419", loop, draft(num_target_layers=44, **{IDS: [1, 10, 20, 30, 40]}), backends=S)
    assert not catches("DF419", target(), draft(), backends=S)
    assert not catches("DF419", target(num_loops=1), draft(), backends=S)
