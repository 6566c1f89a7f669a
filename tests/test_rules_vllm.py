"""DF3xx: vLLM's DFlash loader, proposer options and model-class support."""

from dflash_compat.deployment.options import CheckOptions
from tests.configs import DELETE, catches, draft, fixture_config, merge, run_rule, speculators_draft, target

V = ("vllm",)
V33 = ["vllm==0.33.0"]  # the last vLLM release with the V1 model runner
SPEC = speculators_draft()
DFLASH2 = fixture_config("dflash2-draft")  # z-lab's published DFlash 2 draft config (hidden 6656)


def test_df301_catches_unregistered_names():
    [f] = run_rule("DF301", target(), draft(architectures=["Qwen3DFlashDraft"]), backends=V)
    assert f.backend == "vllm" and "DFlash<name>" in f.message
    assert catches("DF301", target(), draft(architectures=["DFlashLagunaDraftModel"]), backends=V)


def test_df301_passes_every_registered_dflash_draft():
    assert not catches("DF301", target(), DFLASH2, backends=V)  # the published DFlash 2 config
    for arch in ("DFlashDraftModel", "DFlash2BeamDraftModel", "LiLiCorrDraftModel", "MuseGlimmerAssistantModel",
                 "Qwen3XPressModel", "LagunaForCausalLM", "DFlashLagunaForCausalLM"):
        assert not catches("DF301", target(), draft(architectures=[arch]), backends=V), arch
    assert not catches("DF301", target(), SPEC, backends=V)


def test_df301_catches_an_unregistered_draft_name():
    # vLLM keeps a name that starts with DFlash and looks it up as written: DFlashLagunaDraftModel is not
    # registered (DFlashLagunaForCausalLM is; model_executor/models/registry.py:664-696), so both are caught.
    [f] = run_rule("DF301", target(), draft(architectures=["DFlash3DraftModel"]), backends=V)
    assert "DFlash3DraftModel" in f.message and f.backend == "vllm"


def test_df302_errors_on_listed_unsupported_class():
    [f] = run_rule("DF302", target(architectures=["MixtralForCausalLM"]), draft(), backends=V)
    assert f.severity == "error" and "MixtralForCausalLM" in f.message


def test_df302_warns_on_unknown_class():
    [f] = run_rule("DF302", target(architectures=["FooForCausalLM"]), draft(), backends=V)
    assert f.severity == "warning" and "vllm 0.34.0" in f.message  # the newest bundled release by default
    [f] = run_rule("DF302", target(architectures=["FooForCausalLM"]), draft(), backends=V, versions=V33)
    assert "vllm 0.33.0" in f.message


def test_df302_passes_supported_classes():
    for arch in ("Qwen3ForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen2ForCausalLM"):
        assert not catches("DF302", target(architectures=[arch]), draft(), backends=V), arch


def test_df303_errors_when_a_given_k_exceeds_the_block():
    [f] = run_rule("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=16), backends=V)
    assert f.severity == "error" and "16 > block_size - 1 = 15" in f.message
    [g] = run_rule("DF303", target(), draft(n_predict=20), backends=V)  # vLLM's default K: the draft's n_predict
    assert g.severity == "error" and "n_predict 20" in g.message


def test_df303_informs_when_k_is_smaller_and_reads_speculators_tokens():
    [f] = run_rule("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=7), backends=V)
    assert f.severity == "info"
    spec = speculators_draft(**{"speculators_config.proposal_methods": [{"speculative_tokens": 16}]})
    [g] = run_rule("DF303", target(), spec, backends=V)
    assert g.severity == "error" and "speculative_tokens 16" in g.message


def test_df303_silent_without_k_and_on_exact_k():
    assert not catches("DF303", target(), draft(), backends=V)  # no K: DF312's case, not a default to compare
    assert not catches("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=15), backends=V)


def test_df304_errors_when_the_budget_cannot_hold_one_pass():
    opts = CheckOptions(num_speculative_tokens=15, max_num_batched_tokens=16)
    [f] = run_rule("DF304", target(), draft(), options=opts, backends=V)
    assert f.severity == "error" and "refuses to start" in f.message and "<= K 15 + 1 = 16" in f.message


def test_df304_warns_with_the_concurrency_vllm_caps_to():
    opts = CheckOptions(max_num_seqs=256, max_num_batched_tokens=2048)
    [f] = run_rule("DF304", target(), draft(), options=opts, backends=V)
    assert f.severity == "warning" and "at most 128 sequences" in f.message and "assumed" in f.message
    opts = CheckOptions(num_speculative_tokens=7, max_num_seqs=512, max_num_batched_tokens=2048)
    [g] = run_rule("DF304", target(), draft(), options=opts, backends=V)
    assert "2048 // (K 7 + 1) = 256" in g.message


def test_df304_passes_enough_budget_or_missing_options():
    ok = CheckOptions(max_num_seqs=128, max_num_batched_tokens=2048)  # 2048 // 16 = 128
    assert not catches("DF304", target(), draft(), options=ok, backends=V)
    assert not catches("DF304", target(), draft(), options=CheckOptions(max_num_batched_tokens=17), backends=V)
    assert not catches("DF304", target(), draft(), options=CheckOptions(max_num_seqs=256), backends=V)


def test_df305_notes_an_mrope_draft_only_v1_refuses():
    cfg = draft(rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20]})
    [f] = run_rule("DF305", target(), cfg, backends=V, versions=V33)  # the V1 runner: up to vLLM 0.33
    assert not run_rule("DF305", target(), cfg, backends=V)  # 0.34 has no V1 runner
    assert f.locations[0].key == "rope_scaling.mrope_section" and f.severity == "info" and "V1" in f.message


def test_df305_passes_plain_rope():
    assert not catches("DF305", target(), draft(), backends=V)


def test_df306_errors_on_the_nested_flag_and_warns_on_a_top_level_one():
    [f] = run_rule("DF306", target(), draft(**{"dflash_config.sample_from_anchor": True}), backends=V)
    assert f.locations[0].key == "dflash_config.sample_from_anchor" and f.severity == "error"
    [g] = run_rule("DF306", target(), draft(sample_from_anchor=True), backends=V)
    assert g.locations[0].key == "sample_from_anchor" and g.severity == "warning"


def test_df306_passes_false_or_absent():
    assert not catches("DF306", target(), draft(**{"dflash_config.sample_from_anchor": False}), backends=V)
    assert not catches("DF306", target(), draft(), backends=V)


def test_df307_catches_bad_draft_tp_and_indivisible_heads():
    assert catches("DF307", target(), draft(), options=CheckOptions(tp=4, draft_tp=2), backends=V)
    [f] = run_rule("DF307", target(), draft(num_attention_heads=20), options=CheckOptions(tp=8), backends=V)
    assert "20" in f.message and "8" in f.message
    assert catches("DF307", target(), draft(num_key_value_heads=3), options=CheckOptions(tp=2), backends=V)


def test_df307_passes_tp1_matching_tp_and_replicated_kv():
    assert not catches("DF307", target(), draft(), backends=V)
    assert not catches("DF307", target(), draft(), options=CheckOptions(tp=8, draft_tp=1), backends=V)
    assert not catches("DF307", target(), draft(), options=CheckOptions(tp=16), backends=V)  # 8 kv heads replicated


def test_df308_warns_on_copied_top_level_ids():
    cfg = draft(eagle_aux_hidden_state_layer_ids=[1, 9, 17, 25, 33])
    [f] = run_rule("DF308", target(), cfg, backends=V)
    assert f.severity == "warning" and "[0, 8, 16, 24, 32]" in f.message and "[1, 9, 17, 25, 33]" in f.message


def test_df308_notes_the_v1_only_eagle_config_override():
    [f] = run_rule("DF308", target(), draft(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 9]}), backends=V,
                   versions=V33)
    assert f.severity == "info" and "V1" in f.message and "[0, 8]" in f.message
    [g] = run_rule("DF308", target(), draft(eagle_config={"use_aux_hidden_state": True}), backends=V, versions=V33)
    assert "default EAGLE-3 layers" in g.message and g.locations[0].key == "eagle_config"


def test_df308_passes_shifted_ids_unread_keys_or_none():
    assert not catches("DF308", target(), draft(eagle_aux_hidden_state_layer_ids=[2, 10, 18, 26, 34]), backends=V)
    shifted = {"eagle_aux_hidden_state_layer_ids": [2, 10, 18, 26, 34]}
    assert not catches("DF308", target(), draft(eagle_config=shifted), backends=V)
    nested = draft(**{"dflash_config.eagle_aux_hidden_state_layer_ids": [1, 9, 17, 25, 33]})
    assert not catches("DF308", target(), nested, backends=V)  # no vLLM code reads this key
    assert not catches("DF308", target(), draft(), backends=V)


def test_df310_notes_drafts_only_the_v2_runner_serves():
    [f] = run_rule("DF310", target(), DFLASH2, backends=V, versions=V33)
    assert f.severity == "info" and "DFlash candidate-head drafts" in f.message
    mixed = draft(layer_types=["sliding_attention"] * 4 + ["full_attention"], sliding_window=2048)
    [g] = run_rule("DF310", target(), mixed, backends=V, versions=V33)
    assert "mixed sliding/full dflash drafts" in g.message and g.locations[0].key == "layer_types"
    assert "xpress" in run_rule("DF310", target(), draft(architectures=["Qwen3XPressModel"]), backends=V,
                                versions=V33)[0].message


def test_df310_passes_v1_drafts_with_uniform_layers():
    assert not catches("DF310", target(), draft(layer_types=["full_attention"] * 5), backends=V)
    assert not catches("DF310", target(), draft(layer_types=["sliding_attention"] * 5, sliding_window=2048), backends=V)
    assert not catches("DF310", target(), draft(), backends=V)


def test_df311_notes_default_ids_moved_up_by_one():
    shifted = draft(**{"dflash_config.target_layer_ids": [2, 10, 18, 26, 34]})  # Qwen3-8B: 36 layers, 5 ids
    [f] = run_rule("DF311", target(), shifted, backends=V)
    assert f.severity == "info" and f.backend == "vllm" and "#40727" in f.message
    assert "[1, 9, 17, 25, 33]" in f.message and f.locations[0].key == "dflash_config.target_layer_ids"


def test_df311_silent_for_the_default_ids_other_choices_or_speculators():
    assert not catches("DF311", target(), draft(), backends=V)  # the z-lab default: nothing to say
    assert not catches("DF311", target(), draft(**{"dflash_config.target_layer_ids": [3, 10, 18, 26, 34]}),
                       backends=V)
    assert not catches("DF311", target(), draft(**{"dflash_config.target_layer_ids": [2, 10, 18, 26, 34]}),
                       backends=("sglang", "mlx"))
    assert not catches("DF311", target(), SPEC, backends=V)


def test_df312_informs_which_flag_to_add():
    [f] = run_rule("DF312", target(), draft(), backends=V)
    assert f.severity == "info" and "num_speculative_tokens" in f.message and "K = 15 (block_size - 1)" in f.message
    [g] = run_rule("DF312", target(), SPEC, backends=V)
    assert "speculators checkpoint itself takes K = 15" in g.message


def test_df312_silent_with_k_or_a_draft_default():
    assert not catches("DF312", target(), draft(), options=CheckOptions(num_speculative_tokens=15), backends=V)
    assert not catches("DF312", target(), draft(n_predict=15), backends=V)
    assert not catches("DF312", target(), draft(), backends=("sglang",))


def test_df313_catches_keys_vllm_indexes_and_bad_group_size():
    no_group = merge(DFLASH2, **{"dflash_config.conv_group_size": DELETE})
    [f] = run_rule("DF313", target(), no_group, backends=V)
    assert "lacks conv_group_size" in f.message and f.locations[0].key == "dflash_config.conv_group_size"
    top = merge(no_group, conv_group_size=16)
    assert "set only at the top level" in run_rule("DF313", target(), top, backends=V)[0].message
    [g] = run_rule("DF313", target(), merge(DFLASH2, **{"dflash_config.conv_group_size": 48}), backends=V)
    assert "does not divide hidden_size 6656" in g.message
    [h] = run_rule("DF313", target(), merge(DFLASH2, **{"dflash_config.output_multiplier": -1.0}), backends=V)
    assert h.severity == "warning"
    beam = merge(DFLASH2, architectures=["DFlash2BeamDraftModel"], **{"dflash_config.final_logit_softcapping": DELETE})
    assert "final_logit_softcapping" in run_rule("DF313", target(), beam, backends=V)[0].message


def test_df313_passes_the_published_dflash2_config_and_v1_drafts():
    assert not catches("DF313", target(), DFLASH2, backends=V)
    assert not catches("DF313", target(), merge(DFLASH2, architectures=["DFlash2BeamDraftModel"]), backends=V)
    assert not catches("DF313", target(), draft(), backends=V)


def _speculators_v2():
    """What `convert --to speculators` writes for the published DFlash 2 draft (the DFlash 2 keys at the top)."""
    from dflash_compat.convert.plan import plan_conversion
    from dflash_compat.specs import parse_draft_config
    dropped = ("output_multiplier", "final_logit_softcapping", "input_embedding_scale")  # no speculators equivalent
    plain = merge(DFLASH2, **{f"dflash_config.{k}": DELETE for k in dropped}, **{k: DELETE for k in dropped})
    return plan_conversion(parse_draft_config(plain, "d"), [], "speculators").config


def test_df313_passes_a_speculators_dflash2_config_with_top_level_keys():
    # vLLM 0.33.0 speculators/algos.py:129-149: update_dflash2 copies the four keys into dflash_config.
    spec = _speculators_v2()
    assert spec["speculators_model_type"] == "dflash2" and "dflash_config" not in spec
    assert all(spec[k] is not None for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"))
    assert not catches("DF313", target(), spec, backends=V)


def test_df313_catches_a_speculators_dflash2_config_without_its_top_level_keys():
    spec = merge(_speculators_v2(), selector_rank=DELETE, **{"dflash_config.selector_rank": 256})
    [f] = run_rule("DF313", target(), spec, backends=V)
    assert "lacks selector_rank at the top level" in f.message and "update_dflash2" in f.message
    assert "set only inside dflash_config" in f.message and f.locations[0].key == "selector_rank"
    [g] = run_rule("DF313", target(), merge(_speculators_v2(), conv_group_size=48), backends=V)
    assert "conv_group_size 48 does not divide hidden_size 6656" in g.message


def test_df302_catches_a_class_whose_language_model_body_is_not_an_eagle_mixin():
    # vLLM 0.33.0: Exaone4_5_ForConditionalGeneration declares SupportsEagle3 but builds Exaone4ForCausalLM,
    # whose .model (Exaone4Model, exaone4.py:293) is a plain nn.Module: interfaces.py:1746 asserts.
    for arch, body in (("Exaone4_5_ForConditionalGeneration", "Exaone4Model"),
                       ("CohereCompassForConditionalGeneration", "CohereCompassTextModel"),
                       ("Qwen4ExpForConditionalGeneration", "Qwen4ExpModel")):
        [f] = run_rule("DF302", target(architectures=[arch]), draft(), backends=V)
        assert f.severity == "error" and body in f.message and "EagleModelMixin" in f.message, arch


def test_df302_passes_multimodal_classes_whose_body_is_an_eagle_mixin():
    for arch in ("Qwen2_5_VLForConditionalGeneration", "Qwen3_5ForConditionalGeneration"):
        assert not catches("DF302", target(architectures=[arch]), draft(), backends=V), arch


# --- DF314-DF317: vLLM refusals (vLLM 0.33.0)
def test_df314_catches_sliding_layers_without_a_window():
    # qwen3_dflash.py:139-154: a sliding layer needs dflash_config.swa_window_size or sliding_window.
    [f] = run_rule("DF314", target(), draft(**{"dflash_config.use_swa": True, "sliding_window": DELETE}), backends=V)
    assert "use_swa" in f.message and "requires a window size" in f.message
    mixed = draft(layer_types=["sliding_attention", "full_attention"], sliding_window=DELETE)
    assert "layer_types" in run_rule("DF314", target(), mixed, backends=V)[0].message
    # a nested null hides the top-level window (dict.get with a default returns the null)
    hidden = draft(**{"dflash_config.use_swa": True, "dflash_config.swa_window_size": None, "sliding_window": 2048})
    assert catches("DF314", target(), hidden, backends=V)


def test_df314_passes_windows_and_full_attention_drafts():
    assert not catches("DF314", target(), draft(**{"dflash_config.use_swa": True, "sliding_window": 2048}), backends=V)
    assert not catches("DF314", target(), draft(**{"dflash_config.use_swa": True,
                                                   "dflash_config.swa_window_size": 512}), backends=V)
    assert not catches("DF314", target(), draft(layer_types=["full_attention"] * 2), backends=V)
    assert not catches("DF314", target(), draft(), backends=V)


def test_df315_catches_pipeline_parallelism_on_a_class_without_the_relay():
    # eagle3_utils.py:44-45, 57-63: the V2 runner needs the inner decoder's supports_aux_hidden_states_over_pp.
    opts = CheckOptions(pp_size=2)
    [f] = run_rule("DF315", target(architectures=["Qwen3_5MoeForConditionalGeneration"]), draft(), options=opts,
                   backends=V)
    assert "pipeline parallelism" in f.message and "Qwen3_5MoeForConditionalGeneration" in f.message


def test_df315_passes_pp1_and_classes_that_relay():
    assert not catches("DF315", target(architectures=["Qwen3_5MoeForConditionalGeneration"]), draft(), backends=V)
    for arch in ("Qwen3ForCausalLM", "LlamaForCausalLM", "Qwen3VLForConditionalGeneration"):
        assert not catches("DF315", target(architectures=[arch]), draft(), options=CheckOptions(pp_size=4),
                           backends=V), arch


LAGUNA = draft(architectures=["LagunaForCausalLM"], layer_types=["sliding_attention"] * 5, draft_vocab_size=151936)


def test_df316_catches_laguna_layer_types_and_vocab():
    # laguna_dflash.py:45-60 and 244-256.
    mixed = merge(LAGUNA, layer_types=["sliding_attention"] * 4 + ["full_attention"])
    assert "mixes" in run_rule("DF316", target(), mixed, backends=V)[0].message
    assert "requires `layer_types`" in run_rule("DF316", target(), merge(LAGUNA, layer_types=DELETE), backends=V)[0].message
    short = merge(LAGUNA, layer_types=["sliding_attention"])
    assert "1 entries for num_hidden_layers 5" in run_rule("DF316", target(), short, backends=V)[0].message
    assert "requires `draft_vocab_size`" in run_rule("DF316", target(), merge(LAGUNA, draft_vocab_size=DELETE),
                                                     backends=V)[0].message
    [f] = run_rule("DF316", target(), merge(LAGUNA, draft_vocab_size=32000), backends=V)
    assert "!= the target's vocab_size 151936" in f.message


def test_df316_passes_a_uniform_laguna_config_and_other_families():
    assert not catches("DF316", target(), LAGUNA, backends=V)
    assert not catches("DF316", target(), draft(), backends=V)


LILI = draft(architectures=["LiLiCorrDraftModel"], **{"dflash_config.lilicorr_num_layers": 2,
                                                       "dflash_config.lilicorr_candidate_topk": 8,
                                                       "dflash_config.lilicorr_num_heads": 8})


def test_df317_catches_lilicorr_topk_and_heads():
    # lilicorr.py:42-46 and 142-148.
    [f] = run_rule("DF317", target(), merge(LILI, **{"dflash_config.lilicorr_candidate_topk": 12}), backends=V)
    assert "power of two <= 16" in f.message
    assert catches("DF317", target(), merge(LILI, **{"dflash_config.lilicorr_candidate_topk": 32}), backends=V)
    [g] = run_rule("DF317", target(), merge(LILI, **{"dflash_config.lilicorr_num_heads": 7}), backends=V)
    assert "not divisible" in g.message and "4096" in g.message


def test_df317_passes_valid_settings_and_other_families():
    assert not catches("DF317", target(), LILI, backends=V)
    assert not catches("DF317", target(), merge(LILI, **{"dflash_config.lilicorr_hidden_size": 1024,
                                                        "dflash_config.lilicorr_num_heads": 16}), backends=V)
    assert not catches("DF317", target(), draft(**{"dflash_config.lilicorr_candidate_topk": 12}), backends=V)
