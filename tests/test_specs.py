"""Spec parsing: every known draft format and target layout, and one-line ConfigErrors naming the key."""

from __future__ import annotations

import pytest

from dflash_compat.checker import RuleContext
from dflash_compat.exceptions import ConfigError, NotADraftError
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.configs import DELETE, draft, speculators_draft, target

QWEN3_VL = {
    "architectures": ["Qwen3VLForConditionalGeneration"],
    "model_type": "qwen3_vl",
    "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_vl_text", "hidden_size": 4096, "num_hidden_layers": 36, "vocab_size": 151936,
        "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True},
        "rope_theta": 5000000, "eos_token_id": 151645,
    },
}


def test_zlab_v1_block_size_top_level():
    d = parse_draft_config(draft(), "d")
    assert d.format == "zlab-v1"
    assert (d.block_size, d.sources["block_size"]) == (16, "block_size")
    assert d.sources["mask_token_id"] == "dflash_config.mask_token_id"
    assert d.sources["target_layer_ids"] == "dflash_config.target_layer_ids"
    assert not d.target_layer_ids_guessed


def test_zlab_v1_block_size_nested_wins_and_both_are_recorded():
    d = parse_draft_config(draft(**{"dflash_config.block_size": 8}), "d")
    assert (d.block_size, d.sources["block_size"]) == (8, "dflash_config.block_size")
    assert d.block_size_locations == {"dflash_config.block_size": 8, "block_size": 16}


def test_zlab_v1_mask_token_top_level_only():
    d = parse_draft_config(draft(**{"dflash_config.mask_token_id": DELETE, "mask_token_id": 151669}), "d")
    assert (d.mask_token_id, d.sources["mask_token_id"]) == (151669, "mask_token_id")
    assert d.mask_token_id_locations == {"mask_token_id": 151669}


def test_zlab_v2_fields():
    cfg = draft(architectures=["DFlash2DraftModel"], **{
        "dflash_config.conv_kernel_size": 4, "dflash_config.conv_group_size": 64,
        "dflash_config.selector_rank": 256, "dflash_config.selector_top_k": 32,
    })
    d = parse_draft_config(cfg, "d")
    assert d.format == "zlab-v2"
    assert (d.conv_kernel_size, d.conv_group_size, d.selector_rank, d.selector_top_k) == (4, 64, 256, 32)
    assert d.sources["selector_rank"] == "dflash_config.selector_rank"


def test_zlab_v2_detected_from_fields_alone():
    assert parse_draft_config(draft(**{"dflash_config.selector_rank": 256}), "d").format == "zlab-v2"


def test_speculators_format_normalises_aux_ids_and_reads_top_level_fields():
    d = parse_draft_config(speculators_draft(block_size=8, **{
        "speculators_config.proposal_methods": [{"speculative_tokens": 7}]}), "d")
    assert d.format == "speculators"
    assert d.target_layer_ids == [1, 9, 17, 25, 33]
    assert d.sources["target_layer_ids"] == "aux_hidden_state_layer_ids"
    assert (d.mask_token_id, d.sources["mask_token_id"]) == (151669, "mask_token_id")
    assert (d.block_size, d.sources["block_size"]) == (8, "block_size")
    assert d.sources["hidden_size"] == "transformer_layer_config.hidden_size"
    assert d.speculative_tokens == 7
    assert d.verifier_architectures == ["Qwen3ForCausalLM"]
    assert d.rope.theta == 1000000


def test_speculators_layer_types_next_to_the_layer_config():
    cfg = speculators_draft(layer_types=["sliding_attention"] * 4 + ["full_attention"], sliding_window=2048)
    d = parse_draft_config(cfg, "d")
    assert d.layer_types[-1] == "full_attention" and d.sliding_window == 2048
    assert d.sources["layer_types"] == "layer_types"


def test_layer_ids_guessed_from_num_target_layers():
    d = parse_draft_config(draft(**{"dflash_config.target_layer_ids": DELETE}), "d")
    assert d.target_layer_ids_guessed
    assert d.target_layer_ids == [1, 9, 17, 25, 33]
    assert d.sources["target_layer_ids"] == "num_target_layers"


def test_rope_theta_inside_rope_parameters():
    rope = {"rope_type": "default", "rope_theta": 1000000}
    d = parse_draft_config(draft(rope_theta=DELETE, rope_parameters=rope), "d")
    t = parse_target_config(target(rope_theta=DELETE, rope_parameters=rope), "t")
    assert d.rope.theta == t.rope.theta == 1000000
    assert d.sources["rope.theta"] == t.sources["rope.theta"] == "rope_parameters.rope_theta"


def test_rope_scaling_factor_and_type():
    t = parse_target_config(target(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "t")
    assert (t.rope.rope_type, t.rope.factor) == ("yarn", 4.0)


def test_vlm_text_config_sources_point_into_text_config():
    t = parse_target_config(QWEN3_VL, "t")
    assert t.text_prefix == "text_config"
    assert (t.hidden_size, t.sources["hidden_size"]) == (4096, "text_config.hidden_size")
    assert t.rope.mrope_section == [24, 20, 20]
    assert t.sources["rope.mrope_section"] == "text_config.rope_scaling.mrope_section"
    assert t.tie_word_embeddings is False  # top-level fallback
    ctx = RuleContext(target=t, draft=parse_draft_config(draft(), "d"))
    assert ctx.tloc("hidden_size").key == "text_config.hidden_size"
    assert ctx.tloc("num_attention_heads").key == "text_config.num_attention_heads"  # absent: natural key


def test_hybrid_layer_types():
    kinds = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12
    t = parse_target_config(target(model_type="qwen3_next", num_hidden_layers=48, layer_types=kinds), "t")
    assert t.is_hybrid
    assert len(t.recurrent_layers) == 36 and t.recurrent_layers[:3] == [0, 1, 2]


def test_hybrid_nemotron_pattern():
    t = parse_target_config(target(model_type="nemotron_h", hybrid_override_pattern="M-M*-M"), "t")
    assert t.recurrent_layers == [0, 2, 5] and t.is_hybrid


def test_pure_attention_target_is_not_hybrid():
    t = parse_target_config(target(), "t")
    assert not t.is_hybrid and t.recurrent_layers == [] and not t.uses_sliding_window


def test_sliding_window_unused_is_dropped_and_used_is_kept():
    assert parse_target_config(target(sliding_window=4096, use_sliding_window=False), "t").sliding_window is None
    t = parse_target_config(target(sliding_window=4096, use_sliding_window=DELETE), "t")
    assert t.sliding_window == 4096 and t.uses_sliding_window


@pytest.mark.parametrize(
    "quant, expected, key",
    [
        ({"quant_method": "compressed-tensors", "ignore": ["lm_head"]}, False, "quantization_config.ignore"),
        ({"quant_method": "compressed-tensors", "ignore": []}, True, "quantization_config.ignore"),
        ({"quant_method": "gptq", "bits": 4}, False, "quantization_config.quant_method"),
        ({"quant_method": "gptq", "bits": 4, "lm_head": True}, True, "quantization_config.lm_head"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}, False,
         "quantization_config.modules_to_not_convert"),
    ],
)
def test_lm_head_quantized(quant, expected, key):
    t = parse_target_config(target(quantization_config=quant), "t")
    assert t.lm_head_quantized is expected
    assert t.sources["lm_head_quantized"] == key
    assert t.quant_method == quant["quant_method"]


def test_unquantised_target_has_no_lm_head_verdict():
    assert parse_target_config(target(), "t").lm_head_quantized is None


def test_eos_from_generation_config_points_into_that_file():
    t = parse_target_config(target(eos_token_id=DELETE), "t", generation_config={"eos_token_id": [151645, 151643]})
    assert t.eos_token_ids == [151645, 151643]
    loc = RuleContext(target=t, draft=parse_draft_config(draft(), "d")).tloc("eos_token_ids")
    assert (loc.file, loc.key) == ("generation_config.json", "eos_token_id")


@pytest.mark.parametrize(
    "cfg, key",
    [
        (draft(**{"dflash_config.mask_token_id": "151669"}), "dflash_config.mask_token_id"),
        (draft(**{"dflash_config.block_size": 16.0}), "dflash_config.block_size"),
        (draft(rope_theta="1e6"), "rope_theta"),
        (draft(rope_theta=DELETE, rope_parameters={"rope_theta": "big"}), "rope_parameters.rope_theta"),
        (draft(hidden_size=-1), "hidden_size"),
        (speculators_draft(mask_token_id=[1]), "mask_token_id"),
        (speculators_draft(**{"transformer_layer_config.hidden_size": "x"}), "transformer_layer_config.hidden_size"),
    ],
)
def test_wrong_draft_types_raise_one_line_config_error_naming_the_key(cfg, key):
    with pytest.raises(ConfigError) as exc:
        parse_draft_config(cfg, "d")
    msg = str(exc.value)
    assert f"`{key}`" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "cfg, key",
    [
        (dict(QWEN3_VL, text_config=dict(QWEN3_VL["text_config"], hidden_size="4096")), "text_config.hidden_size"),
        (target(num_hidden_layers=36.5), "num_hidden_layers"),
        (target(quantization_config="fp8"), "quantization_config"),
    ],
)
def test_wrong_target_types_raise_one_line_config_error_naming_the_key(cfg, key):
    with pytest.raises(ConfigError) as exc:
        parse_target_config(cfg, "t")
    msg = str(exc.value)
    assert f"`{key}`" in msg and "\n" not in msg


def test_a_plain_model_is_not_a_draft():
    with pytest.raises(NotADraftError):
        parse_draft_config(target(), "d")


def test_a_draft_passed_as_target_is_refused():
    with pytest.raises(ConfigError, match="not a target"):
        parse_target_config(draft(), "t")
