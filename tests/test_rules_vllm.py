"""DF3xx: vLLM's DFlash loader, proposer options and model-class support."""

from dflash_compat.engine import CheckOptions
from tests.configs import DELETE, catches, draft, run_rule, speculators_draft, target

V = ("vllm",)
SPEC = speculators_draft()


def test_df301_catches_an_unregistered_draft_name():
    [f] = run_rule("DF301", target(), draft(architectures=["DFlash3DraftModel"]), backends=V)
    assert "DFlash3DraftModel" in f.message and f.backend == "vllm"


def test_df301_passes_v1_laguna_and_speculators():
    assert not catches("DF301", target(), draft(), backends=V)
    # vLLM 0.33 registers these (engine_support.json, from model_executor/models/registry.py)
    for arch in ("DFlash2DraftModel", "MuseGlimmerAssistantModel", "LiLiCorrDraftModel"):
        assert not catches("DF301", target(), draft(architectures=[arch]), backends=V), arch
    assert not catches("DF301", target(), draft(architectures=["DFlashLagunaDraftModel"]), backends=V)
    assert not catches("DF301", target(), SPEC, backends=V)


def test_df302_errors_on_listed_unsupported_class():
    [f] = run_rule("DF302", target(architectures=["MixtralForCausalLM"]), draft(), backends=V)
    assert f.severity == "error" and "MixtralForCausalLM" in f.message


def test_df302_warns_on_unknown_class():
    [f] = run_rule("DF302", target(architectures=["FooForCausalLM"]), draft(), backends=V)
    assert f.severity == "warning" and "vllm 0.33.0" in f.message


def test_df302_passes_supported_classes():
    for arch in ("Qwen3ForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen2ForCausalLM"):
        assert not catches("DF302", target(architectures=[arch]), draft(), backends=V), arch


def test_df303_errors_when_k_exceeds_the_block():
    [f] = run_rule("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=16), backends=V)
    assert f.severity == "error" and "16 > block_size - 1 = 15" in f.message


def test_df303_informs_when_k_is_smaller_and_reads_speculators_tokens():
    [f] = run_rule("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=7), backends=V)
    assert f.severity == "info"
    spec = speculators_draft(**{"speculators_config.proposal_methods": [{"speculative_tokens": 16}]})
    [g] = run_rule("DF303", target(), spec, backends=V)
    assert g.severity == "error" and "speculative_tokens 16" in g.message


def test_df303_passes_default_and_exact_k():
    assert not catches("DF303", target(), draft(), backends=V)
    assert not catches("DF303", target(), draft(), options=CheckOptions(num_speculative_tokens=15), backends=V)


def test_df304_catches_small_budget():
    opts = CheckOptions(max_num_seqs=256, max_num_batched_tokens=2048)
    [f] = run_rule("DF304", target(), draft(), options=opts, backends=V)
    assert "4096" in f.message and "2048" in f.message


def test_df304_passes_enough_budget_or_missing_options():
    assert not catches("DF304", target(), draft(), options=CheckOptions(max_num_seqs=128, max_num_batched_tokens=2048),
                       backends=V)
    assert not catches("DF304", target(), draft(), options=CheckOptions(max_num_seqs=256), backends=V)


def test_df305_catches_mrope_draft():
    cfg = draft(rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20]})
    [f] = run_rule("DF305", target(), cfg, backends=V)
    assert f.locations[0].key == "rope_scaling.mrope_section"


def test_df305_passes_plain_rope():
    assert not catches("DF305", target(), draft(), backends=V)


def test_df306_catches_sample_from_anchor():
    [f] = run_rule("DF306", target(), draft(**{"dflash_config.sample_from_anchor": True}), backends=V)
    assert f.locations[0].key == "dflash_config.sample_from_anchor"


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


def test_df308_catches_copied_dflash_ids():
    cfg = draft(eagle_aux_hidden_state_layer_ids=[1, 9, 17, 25, 33])
    [f] = run_rule("DF308", target(), cfg, backends=V)
    assert "[0, 8, 16, 24, 32]" in f.message and "[1, 9, 17, 25, 33]" in f.message


def test_df308_passes_shifted_ids_or_none():
    assert not catches("DF308", target(), draft(eagle_aux_hidden_state_layer_ids=[2, 10, 18, 26, 34]), backends=V)
    assert not catches("DF308", target(), draft(), backends=V)


def test_df309_catches_top_level_only_mask():
    cfg = draft(**{"dflash_config.mask_token_id": DELETE}, mask_token_id=151669)
    [f] = run_rule("DF309", target(), cfg, backends=V)
    assert f.locations[0].key == "mask_token_id" and "151669" in f.message


def test_df309_passes_nested_mask_and_speculators():
    assert not catches("DF309", target(), draft(), backends=V)
    assert not catches("DF309", target(), SPEC, backends=V)


def test_df310_catches_mixed_layers():
    cfg = draft(layer_types=["sliding_attention"] * 4 + ["full_attention"], sliding_window=2048)
    [f] = run_rule("DF310", target(), cfg, backends=V)
    assert "4 sliding and 1 full" in f.message


def test_df310_passes_uniform_layers():
    assert not catches("DF310", target(), draft(layer_types=["full_attention"] * 5), backends=V)
    assert not catches("DF310", target(), draft(), backends=V)


def test_df311_informs_once_for_zlab_ids():
    found = run_rule("DF311", target(), draft())
    assert len(found) == 1 and found[0].severity == "info" and found[0].backend == "vllm"


def test_df311_silent_without_vllm_or_for_speculators():
    assert not catches("DF311", target(), draft(), backends=("sglang", "mlx"))
    assert not catches("DF311", target(), SPEC, backends=V)
