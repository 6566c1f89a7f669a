"""DF501-DF504: what the MLX DFlash port needs, decided from config.json alone."""

from dflash_compat.specs import parse_target_config
from tests.configs import DELETE, catches, draft, fixture_config, run_rule, speculators_draft, target

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


def test_df502_catches_two_rope_bases():
    cfg = draft(rope_parameters={"rope_type": "default", "rope_theta": 10000000})
    [f] = run_rule("DF502", target(), cfg, backends=M)
    assert "top level" in f.message and f.severity == "warning"
    assert [loc.key for loc in f.locations] == ["rope_theta", "rope_parameters.rope_theta"]


def test_df502_catches_a_base_where_mlx_does_not_look():
    per_layer = {"full_attention": {"rope_type": "default", "rope_theta": 1000000}}
    [f] = run_rule("DF502", target(), draft(rope_theta=DELETE, rope_parameters=per_layer), backends=M)
    assert "rope_parameters.full_attention.rope_theta" in f.message and "10000" in f.message


def test_df502_catches_a_rope_type_mlx_lm_cannot_build():
    [f] = run_rule("DF502", target(), draft(rope_scaling={"rope_type": "longrope_v9", "factor": 2.0}), backends=M)
    assert f.severity == "error" and "Unsupported RoPE type" in f.message


def test_df502_passes_theta_in_rope_parameters_and_published_drafts():
    # dflash 0.1.0 reads rope_parameters.rope_theta (model_mlx.py:452): the published DFlash 2 config is fine
    assert not catches("DF502", target(), fixture_config("dflash2-draft"), backends=M)
    assert not catches("DF502", target(), draft(rope_theta=DELETE, rope_parameters={"rope_theta": 1e6}), backends=M)
    assert not catches("DF502", target(), draft(), backends=M)
    llama = [fixture_config(f"pairs/llama-3.1-8b/{side}") for side in ("target", "draft")]
    assert not catches("DF502", *llama, backends=M)
    assert not catches("DF502", target(), draft(rope_theta=DELETE), backends=M)  # no base at all: DF117


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


def test_df504_passes_a_mistral3_vlm_whose_text_model_slides():
    """mlx-lm 0.32.2's mistral3 wrapper (also `llava`) has no make_cache: make_prompt_cache gives it plain
    KVCaches (cache.py:31-40), although its ministral3 text model alone would build RotatingKVCaches."""
    text = {"model_type": "ministral3", "hidden_size": 5120, "num_hidden_layers": 40, "vocab_size": 131072,
            "sliding_window": 4096, "layer_types": ["sliding_attention", "full_attention"] * 20}
    for wrapper in ("mistral3", "llava"):
        vlm = target(model_type=wrapper, architectures=["Mistral3ForConditionalGeneration"], text_config=text,
                     hidden_size=DELETE, num_hidden_layers=DELETE, vocab_size=DELETE)
        spec = parse_target_config(vlm, "target")
        assert spec.text_model_type == "ministral3" and "sliding_attention" in spec.layer_types
        assert not catches("DF504", vlm, draft(), backends=M)
    # the same text model as a checkpoint of its own: mlx-lm's ministral3 make_cache builds RotatingKVCaches
    alone = target(**text, use_sliding_window=DELETE)
    assert catches("DF504", alone, draft(), backends=M)


def test_df504_passes_qwen35_plain_and_mistral_without_layer_types():
    qwen35 = target(model_type="qwen3_5", layer_types=["linear_attention"] * 3 + ["full_attention"])
    assert not catches("DF504", qwen35, draft(), backends=M)
    assert not catches("DF504", target(), draft(), backends=M)
    mistral = target(model_type="mistral", sliding_window=4096, use_sliding_window=DELETE)
    assert not catches("DF504", mistral, draft(), backends=M)  # mlx-lm's llama uses a plain KVCache here


class _Stop(Exception):
    pass


def _mlx_reads(monkeypatch, tmp_path, cfg):
    """What dflash 0.1.0's MLX load_draft builds its DFlashConfig from (the test oracle, stopped before weights)."""
    import json

    import pytest

    model_mlx = pytest.importorskip("dflash.model_mlx")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    seen = {}

    def capture(**kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(model_mlx, "snapshot_download", lambda *a, **k: str(tmp_path))
    monkeypatch.setattr(model_mlx, "DFlashConfig", capture)
    try:
        model_mlx.load_draft("local")
    except _Stop:
        pass
    return seen


def test_df502_agrees_with_the_mlx_loader(monkeypatch, tmp_path):
    two_bases = draft(rope_parameters={"rope_type": "default", "rope_theta": 10000000})
    assert catches("DF502", target(), two_bases, backends=M)
    assert _mlx_reads(monkeypatch, tmp_path, two_bases)["rope_theta"] == 1000000  # the top-level value wins
    nested_only = fixture_config("dflash2-draft")
    assert not catches("DF502", target(), nested_only, backends=M)
    assert _mlx_reads(monkeypatch, tmp_path, nested_only)["rope_theta"] == 500000.0  # read from rope_parameters


# --- DF505 the target's sliding window, dropped by mlx-lm
MISTRAL = dict(model_type="mistral", architectures=["MistralForCausalLM"], sliding_window=4096,
               use_sliding_window=DELETE, max_position_embeddings=32768)


def test_df505_catches_a_window_mlx_lm_drops():
    [f] = run_rule("DF505", target(**MISTRAL), draft(), backends=M)
    assert f.severity == "warning" and "4096 tokens" in f.message and "mlx_lm/models/llama.py:34-42" in f.message
    qwen2 = dict(model_type="qwen2", sliding_window=128, use_sliding_window=True, layer_types=DELETE)
    [f] = run_rule("DF505", target(**qwen2), draft(), backends=M)
    assert "mlx_lm/models/qwen2.py:17-30" in f.message  # the typed 17-32 ends on two blank lines
    assert [loc.key for loc in f.locations] == ["sliding_window", "model_type"]


def test_df505_passes_kept_unused_or_unbinding_windows():
    assert not catches("DF505", target(), draft(), backends=M)  # qwen3 without use_sliding_window: no window
    layered = dict(MISTRAL, layer_types=["sliding_attention", "full_attention"] * 18)
    assert not catches("DF505", target(**layered), draft(), backends=M)  # llama.py windows those layers
    assert not catches("DF505", target(**dict(MISTRAL, sliding_window=32768)), draft(), backends=M)  # never binds
    assert not catches("DF505", target(**dict(MISTRAL, model_type="gemma3_text")), draft(), backends=M)  # kept
    assert not catches("DF505", target(**MISTRAL), draft(), backends=("transformers",))  # transformers applies it
