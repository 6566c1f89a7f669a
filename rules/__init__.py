"""Every rule, in code order. An explicit list: no import-time self-registration, no globbing.

Rules sit in one folder per family (inputs, common, transformers, vllm, sglang, mlx, weights, modules,
llamacpp, launch), each rule a file named after its code and problem, with the helpers only that family
uses beside it; `_common.py`, `_modules.py` and `_sources.py` here are shared by several families.
This folder is the top-level `rules/` of the repository, installed as `dflash_compat.rules` (the
name `rules` is taken on PyPI)."""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, SourceFileLoader

from dflash_compat.checker import Rule


class _OwnModules:
    """Finds this package's own modules while the list below imports them (start-up): each rule is a file
    in a family folder here, so the general finders' walk (built-in, frozen, then every suffix a path entry
    could hold) is skipped; any other name, or a folder that cannot be listed, is left to them."""

    folder = __path__[0]
    _listed: dict[str, frozenset] = {}

    @classmethod
    def _files(cls, sub: str) -> frozenset:
        if sub not in cls._listed:
            try:
                cls._listed[sub] = frozenset(os.listdir(os.path.join(cls.folder, sub)))
            except OSError:
                cls._listed[sub] = frozenset()
        return cls._listed[sub]

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        parts = fullname[len(__name__) + 1:].split(".")
        if len(parts) > 2:
            return None
        sub = parts[0] if len(parts) == 2 else ""
        name = parts[-1]
        files = cls._files(sub)
        if f"{name}.py" in files:
            file = os.path.join(cls.folder, sub, f"{name}.py")
            spec = ModuleSpec(fullname, SourceFileLoader(fullname, file), origin=file)
        elif not sub and name in files:  # a family folder: a package
            file = os.path.join(cls.folder, name, "__init__.py")
            spec = ModuleSpec(fullname, SourceFileLoader(fullname, file), origin=file, is_package=True)
            spec.submodule_search_locations = [os.path.join(cls.folder, name)]
        else:
            return None
        spec.has_location = True
        return spec


# taken out again below (left in after a broken rule file, it still finds only this package's files)
sys.meta_path.insert(0, _OwnModules)
from dflash_compat.rules.common import (  # noqa: E402 - after the finder that speeds it up
    df101_hidden_size_mismatch,
    df103_layer_ids_missing,
    df104_layer_id_out_of_range,
    df105_layer_ids_duplicated_or_empty,
    df106_layer_ids_not_increasing,
    df107_layer_id_is_last_layer,
    df108_num_target_layers_mismatch,
    df109_layer_ids_guessed,
    df110_vocab_size_mismatch,
    df111_mask_token_missing,
    df112_mask_token_out_of_range,
    df113_mask_token_is_special_token,
    df114_mask_token_locations_disagree,
    df115_block_size_invalid,
    df116_block_size_locations_disagree,
    df117_rope_theta_mismatch,
    df118_rope_type_mismatch,
    df119_draft_layer_types_invalid,
    df120_draft_activation_not_silu,
    df121_gemma_scaling_missing,
    df122_target_lm_head_quantized,
    df123_draft_quantized,
    df124_speculators_target_mismatch,
    df125_target_uses_mrope,
    df126_draft_scaling_engine_dependent,
    df127_draft_rope_layout_engine_dependent,
    df128_speculators_convert_drops_last_layer,
    df129_dflash2_config_incomplete,
)
from dflash_compat.rules.inputs import (  # noqa: E402 - after the finder that speeds it up
    df001_target_needs_remote_code,
    df002_target_not_causal_lm,
    df003_target_config_incomplete,
    df004_draft_config_incomplete,
    df005_draft_family_not_recognised,
    df006_deep_checks_skipped,
    df007_draft_weights_not_checked,
    df008_target_not_buildable,
    df009_draft_family_not_loadable,
    df010_model_size_implausible,
    df011_engine_version_newer_than_facts,
    df012_engine_version_older_than_window,
)
from dflash_compat.rules.launch import (  # noqa: E402 - after the finder that speeds it up
    df901_launch_flag_unknown,
    df902_vllm_speculative_config_invalid,
    df903_launch_speculative_tokens_invalid,
    df904_llamacpp_draft_kv_cache_quantized,
    df905_llamacpp_split_mode_tensor_dflash,
    df906_vllm_dspark_draft_as_dflash,
    df907_llamacpp_draft_p_min_default_changed,
    df908_launch_pair_launched_twice,
    df909_launch_value_not_judged,
    df910_launch_pair_not_checked,
    df911_launch_flags_not_judged,
    df912_launch_speculative_method_refused,
    df913_launch_engine_predates_dflash,
)
from dflash_compat.rules.llamacpp import (  # noqa: E402 - after the finder that speeds it up
    df801_llamacpp_target_without_layer_hook,
    df802_llamacpp_target_not_convertible,
    df803_llamacpp_target_layer_past_slots,
    df804_llamacpp_target_layers_missing,
    df805_llamacpp_target_layers_not_shifted,
    df806_llamacpp_block_size_default,
    df807_llamacpp_mask_token_invalid,
    df808_llamacpp_sample_from_anchor_ignored,
    df809_llamacpp_draft_mrope_missing,
    df810_llamacpp_dflash2_metadata,
    df811_llamacpp_hidden_activation,
    df812_llamacpp_vocabulary_mismatch,
    df813_llamacpp_fc_width_mismatch,
    df814_llamacpp_draft_not_convertible,
    df815_llamacpp_draft_n_max_clamped,
)
from dflash_compat.rules.mlx import (  # noqa: E402 - after the finder that speeds it up
    df501_mlx_draft_config_keys_missing,
    df502_mlx_draft_rope_misread,
    df503_mlx_draft_attention_bias,
    df504_mlx_target_cache_unsupported,
    df505_mlx_target_sliding_window_dropped,
    df510_mlx_target_not_buildable,
    df511_mlx_replay_patches_gated_delta_net,
    df512_mlx_embed_scale_applied,
    df513_mlx_draft_quantized_unloadable,
    df520_mlx_gemma3_window_pattern_past_layers,
)
from dflash_compat.rules.modules import (  # noqa: E402 - after the finder that speeds it up
    df701_target_embedding_not_found,
    df702_target_output_head_not_found,
    df703_target_layers_not_found,
    df704_target_scaling_not_mirrored,
    df705_layer_id_beyond_built_layers,
    df706_mlx_cache_not_trimmable,
    df707_mlx_rotating_cache_wraps,
    df708_mlx_paths_unreachable,
    df709_layer_returns_tuple,
    df710_target_embedding_width_mismatch,
)
from dflash_compat.rules.sglang import (  # noqa: E402 - after the finder that speeds it up
    df401_sglang_num_draft_tokens_mismatch,
    df402_sglang_target_architecture_unsupported,
    df404_sglang_v2_quantized_lm_head,
    df405_sglang_draft_quantized_with_target,
    df406_sglang_qwen3_5_layer_ids_rejected,
    df407_sglang_last_layer_id_unsupported,
    df408_sglang_mask_token_conflict,
    df409_sglang_dflash_config_invalid,
    df410_sglang_dp_attention_without_dp_lm_head,
    df411_sglang_pipeline_parallel_unsupported,
    df412_sglang_block_size_flags_disagree,
    df413_sglang_draft_window_smaller_than_block,
    df414_sglang_quantized_lm_head_tp,
    df415_sglang_dp_attention_draft_unsupported,
    df416_sglang_domino_config_invalid,
    df417_sglang_mimo_extras_invalid,
    df418_sglang_trtllm_mha_draft_fallback,
    df419_sglang_loop_model_layer_range,
)
from dflash_compat.rules.transformers import (  # noqa: E402 - after the finder that speeds it up
    df201_target_cache_not_croppable,
    df202_target_sliding_window_cache,
    df203_hf_generate_keys_not_top_level,
    df204_reference_needs_num_target_layers,
    df205_runtime_draft_rope_unsupported,
    df206_native_generate_output_has_no_cache,
    df207_native_generate_needs_position_ids,
    df208_target_forward_prepends_prompt,
    df209_target_hidden_streams,
    df210_target_keeps_no_cache,
    df211_target_sparse_attention_topk,
    df251_forward_signature_incomplete,
    df252_hidden_states_not_returned,
    df253_embedding_accessors_missing,
    df254_past_key_values_deprecated,
    df255_cache_crop_semantics_changed,
    df256_cache_layers_not_croppable,
    df257_sliding_cache_needs_past_recording,
    df258_no_model_embed_tokens,
)
from dflash_compat.rules.vllm import (  # noqa: E402 - after the finder that speeds it up
    df301_vllm_draft_architecture_unsupported,
    df302_vllm_target_architecture_unsupported,
    df303_vllm_num_speculative_tokens_exceeds_block,
    df304_vllm_token_budget_too_small,
    df305_vllm_draft_mrope,
    df306_vllm_sample_from_anchor,
    df307_vllm_tensor_parallel_invalid,
    df308_vllm_eagle_layer_ids_override,
    df310_vllm_draft_needs_v2_runner,
    df311_layer_ids_shifted_for_old_vllm,
    df312_vllm_num_speculative_tokens_missing,
    df313_vllm_dflash2_config_invalid,
    df314_vllm_draft_sliding_window_missing,
    df315_vllm_pipeline_parallel_aux_states,
    df316_vllm_laguna_dflash_config_invalid,
    df317_vllm_lilicorr_config_invalid,
    df351_vllm_shared_modules_unreachable,
)
from dflash_compat.rules.weights import (  # noqa: E402 - after the finder that speeds it up
    df601_fc_shape_mismatch,
    df602_draft_layer_count_mismatch,
    df603_draft_tensor_missing,
    df604_draft_tensor_shape_mismatch,
    df605_draft_v2_tensors_mismatch,
    df606_draft_bundles_embeddings,
    df607_draft_weights_fp16,
    df608_draft_weights_quantized,
    df609_draft_unexpected_tensors,
    df610_draft_weights_incomplete,
    df611_draft_codebook_spelling,
)

sys.meta_path.remove(_OwnModules)

__all__ = ["ALL_RULES", "RETIRED", "RULES_BY_CODE", "get_rule"]

# Codes of rules that were removed because the engine does not do what they said. A retired code is
# never given to another rule, so old --select/--ignore lists and CI baselines keep their meaning.
RETIRED: dict[str, str] = {
    "DF309": "vllm-mask-token-not-nested: vLLM 0.33 reads a top-level mask_token_id when dflash_config has none "
    "(v1/worker/gpu/spec_decode/utils.py:99-103); DF114 reports two locations that disagree",
    "DF403": "sglang-hybrid-target-scheduler: SGLang 0.5.23 has no --mamba-scheduler-strategy flag; DFLASH commits "
    "the accepted recurrent state of hybrid targets itself (speculative/dflash_worker_v2.py:691-696, 2085-2131)",
}

ALL_RULES: list[Rule] = [
    # --- DF0xx: inputs the checker cannot fully judge ---
    df001_target_needs_remote_code.RULE,
    df002_target_not_causal_lm.RULE,
    df003_target_config_incomplete.RULE,
    df004_draft_config_incomplete.RULE,
    df005_draft_family_not_recognised.RULE,
    df006_deep_checks_skipped.RULE,
    df007_draft_weights_not_checked.RULE,
    df008_target_not_buildable.RULE,
    df009_draft_family_not_loadable.RULE,
    df010_model_size_implausible.RULE,
    df011_engine_version_newer_than_facts.RULE,
    df012_engine_version_older_than_window.RULE,
    # --- DF1xx: the common contract, from configs ---
    df101_hidden_size_mismatch.RULE,
    df103_layer_ids_missing.RULE,
    df104_layer_id_out_of_range.RULE,
    df105_layer_ids_duplicated_or_empty.RULE,
    df106_layer_ids_not_increasing.RULE,
    df107_layer_id_is_last_layer.RULE,
    df108_num_target_layers_mismatch.RULE,
    df109_layer_ids_guessed.RULE,
    df110_vocab_size_mismatch.RULE,
    df111_mask_token_missing.RULE,
    df112_mask_token_out_of_range.RULE,
    df113_mask_token_is_special_token.RULE,
    df114_mask_token_locations_disagree.RULE,
    df115_block_size_invalid.RULE,
    df116_block_size_locations_disagree.RULE,
    df117_rope_theta_mismatch.RULE,
    df118_rope_type_mismatch.RULE,
    df119_draft_layer_types_invalid.RULE,
    df120_draft_activation_not_silu.RULE,
    df121_gemma_scaling_missing.RULE,
    df122_target_lm_head_quantized.RULE,
    df123_draft_quantized.RULE,
    df124_speculators_target_mismatch.RULE,
    df125_target_uses_mrope.RULE,
    df126_draft_scaling_engine_dependent.RULE,
    df127_draft_rope_layout_engine_dependent.RULE,
    df128_speculators_convert_drops_last_layer.RULE,
    df129_dflash2_config_incomplete.RULE,
    # --- DF2xx: transformers (reference PyTorch runtime) ---
    df201_target_cache_not_croppable.RULE,
    df202_target_sliding_window_cache.RULE,
    df203_hf_generate_keys_not_top_level.RULE,
    df204_reference_needs_num_target_layers.RULE,
    df205_runtime_draft_rope_unsupported.RULE,
    df206_native_generate_output_has_no_cache.RULE,
    df207_native_generate_needs_position_ids.RULE,
    df208_target_forward_prepends_prompt.RULE,
    df209_target_hidden_streams.RULE,
    df210_target_keeps_no_cache.RULE,
    df211_target_sparse_attention_topk.RULE,
    df251_forward_signature_incomplete.RULE,
    df252_hidden_states_not_returned.RULE,
    df253_embedding_accessors_missing.RULE,
    df254_past_key_values_deprecated.RULE,
    df255_cache_crop_semantics_changed.RULE,
    df256_cache_layers_not_croppable.RULE,
    df257_sliding_cache_needs_past_recording.RULE,
    df258_no_model_embed_tokens.RULE,
    # --- DF3xx: vLLM ---
    df301_vllm_draft_architecture_unsupported.RULE,
    df302_vllm_target_architecture_unsupported.RULE,
    df303_vllm_num_speculative_tokens_exceeds_block.RULE,
    df304_vllm_token_budget_too_small.RULE,
    df305_vllm_draft_mrope.RULE,
    df306_vllm_sample_from_anchor.RULE,
    df307_vllm_tensor_parallel_invalid.RULE,
    df308_vllm_eagle_layer_ids_override.RULE,
    df310_vllm_draft_needs_v2_runner.RULE,
    df311_layer_ids_shifted_for_old_vllm.RULE,
    df312_vllm_num_speculative_tokens_missing.RULE,
    df313_vllm_dflash2_config_invalid.RULE,
    df314_vllm_draft_sliding_window_missing.RULE,
    df315_vllm_pipeline_parallel_aux_states.RULE,
    df316_vllm_laguna_dflash_config_invalid.RULE,
    df317_vllm_lilicorr_config_invalid.RULE,
    df351_vllm_shared_modules_unreachable.RULE,
    # --- DF4xx: SGLang ---
    df401_sglang_num_draft_tokens_mismatch.RULE,
    df402_sglang_target_architecture_unsupported.RULE,
    df404_sglang_v2_quantized_lm_head.RULE,
    df405_sglang_draft_quantized_with_target.RULE,
    df406_sglang_qwen3_5_layer_ids_rejected.RULE,
    df407_sglang_last_layer_id_unsupported.RULE,
    df408_sglang_mask_token_conflict.RULE,
    df409_sglang_dflash_config_invalid.RULE,
    df410_sglang_dp_attention_without_dp_lm_head.RULE,
    df411_sglang_pipeline_parallel_unsupported.RULE,
    df412_sglang_block_size_flags_disagree.RULE,
    df413_sglang_draft_window_smaller_than_block.RULE,
    df414_sglang_quantized_lm_head_tp.RULE,
    df415_sglang_dp_attention_draft_unsupported.RULE,
    df416_sglang_domino_config_invalid.RULE,
    df417_sglang_mimo_extras_invalid.RULE,
    df418_sglang_trtllm_mha_draft_fallback.RULE,
    df419_sglang_loop_model_layer_range.RULE,
    # --- DF5xx: MLX ---
    df501_mlx_draft_config_keys_missing.RULE,
    df502_mlx_draft_rope_misread.RULE,
    df503_mlx_draft_attention_bias.RULE,
    df504_mlx_target_cache_unsupported.RULE,
    df505_mlx_target_sliding_window_dropped.RULE,
    df510_mlx_target_not_buildable.RULE,
    df511_mlx_replay_patches_gated_delta_net.RULE,
    df512_mlx_embed_scale_applied.RULE,
    df513_mlx_draft_quantized_unloadable.RULE,
    df520_mlx_gemma3_window_pattern_past_layers.RULE,
    # --- DF6xx: draft weights (safetensors headers) ---
    df601_fc_shape_mismatch.RULE,
    df602_draft_layer_count_mismatch.RULE,
    df603_draft_tensor_missing.RULE,
    df604_draft_tensor_shape_mismatch.RULE,
    df605_draft_v2_tensors_mismatch.RULE,
    df606_draft_bundles_embeddings.RULE,
    df607_draft_weights_fp16.RULE,
    df608_draft_weights_quantized.RULE,
    df609_draft_unexpected_tensors.RULE,
    df610_draft_weights_incomplete.RULE,
    df611_draft_codebook_spelling.RULE,
    # --- DF7xx: target module tree (meta device) ---
    df701_target_embedding_not_found.RULE,
    df702_target_output_head_not_found.RULE,
    df703_target_layers_not_found.RULE,
    df704_target_scaling_not_mirrored.RULE,
    df705_layer_id_beyond_built_layers.RULE,
    df706_mlx_cache_not_trimmable.RULE,
    df707_mlx_rotating_cache_wraps.RULE,
    df708_mlx_paths_unreachable.RULE,
    df709_layer_returns_tuple.RULE,
    df710_target_embedding_width_mismatch.RULE,
    # --- DF8xx: llama.cpp (GGUF) ---
    df801_llamacpp_target_without_layer_hook.RULE,
    df802_llamacpp_target_not_convertible.RULE,
    df803_llamacpp_target_layer_past_slots.RULE,
    df804_llamacpp_target_layers_missing.RULE,
    df805_llamacpp_target_layers_not_shifted.RULE,
    df806_llamacpp_block_size_default.RULE,
    df807_llamacpp_mask_token_invalid.RULE,
    df808_llamacpp_sample_from_anchor_ignored.RULE,
    df809_llamacpp_draft_mrope_missing.RULE,
    df810_llamacpp_dflash2_metadata.RULE,
    df811_llamacpp_hidden_activation.RULE,
    df812_llamacpp_vocabulary_mismatch.RULE,
    df813_llamacpp_fc_width_mismatch.RULE,
    df814_llamacpp_draft_not_convertible.RULE,
    df815_llamacpp_draft_n_max_clamped.RULE,
    # --- DF9xx: launch commands (`dflash-check launch`) ---
    df901_launch_flag_unknown.RULE,
    df902_vllm_speculative_config_invalid.RULE,
    df903_launch_speculative_tokens_invalid.RULE,
    df904_llamacpp_draft_kv_cache_quantized.RULE,
    df905_llamacpp_split_mode_tensor_dflash.RULE,
    df906_vllm_dspark_draft_as_dflash.RULE,
    df907_llamacpp_draft_p_min_default_changed.RULE,
    df908_launch_pair_launched_twice.RULE,
    df909_launch_value_not_judged.RULE,
    df910_launch_pair_not_checked.RULE,
    df911_launch_flags_not_judged.RULE,
    df912_launch_speculative_method_refused.RULE,
    df913_launch_engine_predates_dflash.RULE,
]

RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return RULES_BY_CODE.get(code.upper())
