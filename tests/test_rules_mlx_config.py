"""DF501-DF504: what the MLX DFlash port needs, decided from config.json alone."""

from tests.configs import DELETE, catches, draft, run_rule, speculators_draft, target

M = ("mlx",)
SPEC = speculators_draft()


def test_df501_lists_missing_keys():
    cfg = draft(head_dim=DELETE, **{"dflash_config.mask_token_id": DELETE}, mask_token_id=151669)
    [f] = run_rule("DF501", target(), cfg, backends=M)
    assert "head_dim" in f.message and "dflash_config.mask_token_id" in f.message
    assert [loc.key for loc in f.locations] == ["head_dim", "dflash_config.mask_token_id"]


def test_df501_catches_speculators_layout():
    [f] = run_rule("DF501", target(), SPEC, backends=M)
    assert "speculators" in f.message


def test_df501_passes_complete_zlab_config():
    assert not catches("DF501", target(), draft(), backends=M)


def test_df502_catches_theta_only_in_rope_parameters():
    cfg = draft(rope_theta=DELETE, rope_parameters={"rope_type": "default", "rope_theta": 1000000})
    [f] = run_rule("DF502", target(), cfg, backends=M)
    assert "rope_parameters.rope_theta" in f.message


def test_df502_passes_top_level_theta_and_leaves_absence_to_df117():
    assert not catches("DF502", target(), draft(), backends=M)
    assert not catches("DF502", target(), draft(rope_theta=DELETE), backends=M)


def test_df503_catches_attention_bias():
    assert catches("DF503", target(), draft(attention_bias=True), backends=M)


def test_df503_passes_no_bias():
    assert not catches("DF503", target(), draft(), backends=M)


def test_df504_catches_non_qwen35_hybrid():
    [f] = run_rule("DF504", target(model_type="nemotron_h", hybrid_override_pattern="M-M*"), draft(), backends=M)
    assert "assertion" in f.message and f.severity == "error"


def test_df504_catches_rotating_cache_targets():
    gpt_oss = target(model_type="gpt_oss", sliding_window=128, use_sliding_window=DELETE,
                     layer_types=["sliding_attention", "full_attention"] * 18)
    [f] = run_rule("DF504", gpt_oss, draft(), backends=M)
    assert "RotatingKVCache" in f.message and "128" in f.message
    assert f.severity == "warning"  # dflash 0.1.0 and our runtime roll rotating caches back exactly
    # mlx-lm 0.32.2: ministral3's make_cache builds a RotatingKVCache for layers layer_types marks sliding
    # (the mistral3 VLM wrapper has no make_cache of its own: mlx-lm gives it plain KVCaches)
    ministral3 = target(model_type="ministral3", sliding_window=4096, use_sliding_window=DELETE,
                        layer_types=["sliding_attention"] * 36)
    assert catches("DF504", ministral3, draft(), backends=M)


def test_df504_passes_qwen35_plain_and_mistral_without_layer_types():
    qwen35 = target(model_type="qwen3_5", layer_types=["linear_attention"] * 3 + ["full_attention"])
    assert not catches("DF504", qwen35, draft(), backends=M)
    assert not catches("DF504", target(), draft(), backends=M)
    mistral = target(model_type="mistral", sliding_window=4096, use_sliding_window=DELETE)
    assert not catches("DF504", mistral, draft(), backends=M)  # mlx-lm's llama uses a plain KVCache here
