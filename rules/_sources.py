"""Engine code that several rules rest on, cited once (file:line in the releases of contract.ENGINE_VERSIONS).

A citation used by one rule only lives in that rule's file. Paths are relative to each wheel's top
package; `tests/test_rule_provenance.py` checks every range against the unpacked wheels when they are
available (DFLASH_ENGINE_SRC).
"""

from __future__ import annotations

from dflash_compat.checker import EngineSource as S

# --- dflash 0.1.0: the transformers reference (dflash/model.py) and its loaders ---------------------
REF_IDS_FORMULA = S("dflash", "dflash/model.py", "25-34", "build_target_layer_ids: one layer -> N//2, else 1..N-3")
REF_FEATURES = S("dflash", "dflash/model.py", "37-43", "feature i = hidden_states[id + 1], concatenated in list order")
REF_DRAFT_VALUE = S("dflash", "dflash/model.py", "127-132", "draft keys: dflash_config first, then the top level")
REF_EMBED = S("dflash", "dflash/model.py", "135-143", "raw get_input_embeddings().weight rows x scale; lm_head else "
              "get_output_embeddings()")
REF_CACHE = S("dflash", "dflash/model.py", "146-154", "DynamicCache(config=...), activate_past_recording(), crop(-n)")
REF_TARGET_CALL = S("dflash", "dflash/model.py", "205-219", "target(ids, position_ids=, past_key_values=, use_cache=, "
                    "logits_to_keep=1, output_hidden_states=); reads .logits / .hidden_states")
REF_BLOCK = S("dflash", "dflash/model.py", "234-250", "block = [anchor, mask...] embedded x input_embedding_scale; "
              "draft cache cropped to start")
REF_VERIFY = S("dflash", "dflash/model.py", "269-308", "verify on the target cache, crop it to the accepted length")
REF_ROPE = S("dflash", "dflash/model.py", "331-337", "q/k rotated with rotate_half (neox layout) over the whole head")
REF_ATTENTION = S("dflash", "dflash/model.py", "340-367", "Qwen3 attention built from the config (heads, head_dim, "
                  "attention_bias, layer_types, is_causal)")
REF_DRAFT_INIT = S("dflash", "dflash/model.py", "554-571", "layers, target_layer_ids (default built from "
                   "config.num_target_layers), fc, rotary, block_size, mask_token_id")
REF_LOGITS = S("dflash", "dflash/model.py", "599-605", "logits x output_multiplier, then tanh soft-cap")
REF_V2 = S("dflash", "dflash/model.py", "492-522", "DFlash 2 conv and candidate-selector modules and their shapes")
REF_V2_INIT = S("dflash", "dflash/model.py", "630-651", "DFlash2DraftModel: codebook key mapping, conv and selector")
REF_MLX_QUANTIZE = S("dflash", "dflash/benchmark.py", "112-123", "--draft-bits: the loaded MLX draft is quantised "
                     "with nn.quantize (4 or 8 bits)")
REF_LOAD = S("dflash", "dflash/benchmark.py", "87-109", "target: AutoModelForCausalLM / ImageTextToText, bf16, no "
             "trust_remote_code; draft class by architectures, loaded as bf16")

# --- dflash 0.1.0: the MLX port (dflash/model_mlx.py) ------------------------------------------------
MLX_THETA = S("dflash", "dflash/model_mlx.py", "434-452", "rope = rope_parameters or rope_scaling; theta = top-level "
              "rope_theta, else rope.rope_theta, else 10000")
MLX_ROPE = S("dflash", "dflash/model_mlx.py", "138-150", "initialize_rope(dims=head_dim, traditional=False)")
MLX_ATTENTION = S("dflash", "dflash/model_mlx.py", "153-168", "draft attention: q/k/v/o without bias, head_dim "
                  "from the config")
MLX_DRAFT_INIT = S("dflash", "dflash/model_mlx.py", "331-349", "fc = len(target_layer_ids) x hidden; layers; rope")
MLX_BIND = S("dflash", "dflash/model_mlx.py", "351-369", "embed_tokens lookup paths; embed_scale attribute x "
             "input_embedding_scale; lm_head else embed_tokens.as_linear")
MLX_EMBED = S("dflash", "dflash/model_mlx.py", "389", "block embedding = embed_tokens(ids) x embed_scale")
MLX_LOAD_DRAFT = S("dflash", "dflash/model_mlx.py", "430-471", "load_draft indexes config.json keys directly")
MLX_SCALES = S("dflash", "dflash/model_mlx.py", "461-465", "final_logit_softcapping nested then top; "
               "input_embedding_scale / output_multiplier nested only")
MLX_LOAD_WEIGHTS = S("dflash", "dflash/model_mlx.py", "472-485", "mx.load every shard; strict model.load_weights")
MLX_LOAD_TARGET = S("dflash", "dflash/model_mlx.py", "425-427", "mlx_lm.load(model_id), no trust_remote_code")
MLX_TRIM = S("dflash", "dflash/model_mlx.py", "489-504", "_trim_recent_cache: RotatingKVCache reordered then cut")
MLX_HOOK = S("dflash", "dflash/model_mlx.py", "507-536", "layer hooks store out[0] of a tuple; layers at model.layers "
             "/ language_model.layers / layers, indexed by id")
MLX_GDN = S("dflash", "dflash/model_mlx.py", "539-653", "GatedDeltaNet.__call__ patched class-wide; replay rollback "
            "asserts every non-trimmable cache is a GatedDeltaNet")
MLX_LOOP = S("dflash", "dflash/model_mlx.py", "748-793", "make_prompt_cache, can_trim_prompt_cache, GDN capture "
             "when the target cache cannot be trimmed")
MLX_ROLLBACK = S("dflash", "dflash/model_mlx.py", "886-892", "after verify: trim the target cache, or replay")

# --- mlx-lm 0.32.2 -------------------------------------------------------------------------------------
MLXLM_ROPE = S("mlx-lm", "mlx_lm/models/rope_utils.py", "291-373", "initialize_rope: rope types it builds, "
               "ValueError for others; partial rotation only for `proportional`")
MLXLM_TRIM = S("mlx-lm", "mlx_lm/models/cache.py", "115-138", "trim_prompt_cache trims nothing once any cache "
               "layer is not trimmable")
MLXLM_ROTATING = S("mlx-lm", "mlx_lm/models/cache.py", "544-545", "RotatingKVCache.is_trimmable: offset < max_size")
MLXLM_CLASSES = S("mlx-lm", "mlx_lm/utils.py", "200-225", "model class by model_type (remapped), ValueError if unknown")
MLXLM_EMBED_SCALE = S("mlx-lm", "mlx_lm/models/gemma4_text.py", "403-404", "Gemma4TextModel.embed_scale = sqrt(hidden)")
MLXLM_GEMMA3_SCALE = S("mlx-lm", "mlx_lm/models/gemma3_text.py", "190", "Gemma3 scales inline after the lookup (no "
                       "embed_scale attribute); in every release, Gemma4 from 0.31.2")

# --- transformers 5.24.0 -----------------------------------------------------------------------------
HF_LAST_HIDDEN = S("transformers", "transformers/utils/output_capturing.py", "368-379",
                   "hidden_states[-1] replaced by last_hidden_state (after the final norm)")
HF_CROP = S("transformers", "transformers/cache_utils.py", "164-181", "DynamicLayer.crop: negative count; a "
            "positive value raises")
HF_SLIDING_CROP = S("transformers", "transformers/cache_utils.py", "196-216", "DynamicSlidingWindowLayer keeps "
                    "window-1 states unless activate_past_recording()")
HF_SLIDING_CROP_RAISES = S("transformers", "transformers/cache_utils.py", "281-291", "crop past the window raises "
                           "without past recording")
HF_LINEAR_CROP = S("transformers", "transformers/cache_utils.py", "1149-1207", "linear-attention layers: crop cuts "
                   "conv states only; not croppable once a recurrent state exists")
HF_ROLLBACK = S("transformers", "transformers/generation/utils.py", "4002", "assisted generation records the recurrent "
                "states of the drafted tokens (5.25)", version="5.25.0")
HF_ROLLBACK_CROP = S("transformers", "transformers/cache_utils.py", "1173-1207", "linear-attention crop restores the "
                     "recorded recurrent state (5.25)", version="5.25.0")
HF_STATEFUL = S("transformers", "transformers/generation/utils.py", "1885-1890", "assisted generation refuses "
                "_is_stateful models")
HF_NATIVE_KEYS = S("transformers", "transformers/generation/candidate_generator.py", "1535-1540",
                   "assistant config.target_layer_ids / block_size / mask_token_id (top-level attributes)")
HF_NATIVE_EMBED = S("transformers", "transformers/generation/candidate_generator.py", "1552-1568",
                    "noise ids embedded by calling the target's input-embedding module")
HF_NATIVE_SETUP = S("transformers", "transformers/generation/utils.py", "1357-1362",
                    "DFlash candidates from get_input_embeddings() / get_output_embeddings()")
HF_NATIVE_LOGITS = S("transformers", "transformers/generation/candidate_generator.py", "1647-1649",
                    "assistant candidate logits = the target's output embeddings, raw (no assistant key read)")
HF_ROPE_PARAMS = S("transformers", "transformers/modeling_rope_utils.py", "775-795", "rope_parameters values win; "
                   "top-level rope_theta / partial_rotary_factor only fill gaps")
HF_QWEN3_ROPE = S("transformers", "transformers/models/qwen3/modeling_qwen3.py", "86-120",
                  "Qwen3RotaryEmbedding: rope_type honoured, default RoPE over the full head_dim")
HF_PKV_ALIAS = S("transformers", "transformers/models/qwen3/modeling_qwen3.py", "440",
                 "@deprecate_kwarg('past_key_values', '5.40.0', new_name='cache')")
HF_SCALED_EMBED = S("transformers", "transformers/models/gemma3/modeling_gemma3.py", "89-100",
                    "Gemma3TextScaledWordEmbedding.forward multiplies by embed_scale")

# --- vLLM 0.33.0 ---------------------------------------------------------------------------------------
VLLM_AUX_SORTED = S("vllm", "vllm/model_executor/models/interfaces.py", "1616-1617",
                    "aux layers stored as sorted(set(ids))")
VLLM_AUX_CAPTURE = S("vllm", "vllm/model_executor/models/interfaces.py", "1640-1649",
                     "aux state = hidden_states + residual (before the final norm)")
VLLM_AUX_DEFAULT = S("vllm", "vllm/model_executor/models/interfaces.py", "1751-1772",
                     "default aux layers (2, N // 2, N - 3)")
VLLM_LLAMA_CAPTURE = S("vllm", "vllm/model_executor/models/llama.py", "427-451",
                       "aux id L captured after layer L-1; norm applied after the loop")
VLLM_AUX_FROM_CONFIG_V1 = S("vllm", "vllm/v1/worker/gpu_model_runner.py", "5180-5224",
                            "eagle_aux ids, else dflash_config.target_layer_ids + 1, else the model's defaults")
VLLM_AUX_FROM_CONFIG_V2 = S("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "113-150",
                            "V2 runner: eagle_aux ids, dflash ids + 1, top-level target_layer_ids + 1, defaults")
VLLM_FC_WIDTH = S("vllm", "vllm/model_executor/models/qwen3_dflash.py", "84-92",
                  "fc input = target_hidden_size x len(aux ids) (draft depth when none)")
VLLM_FC_CHECK = S("vllm", "vllm/model_executor/models/qwen3_dflash.py", "829-848",
                  "ValueError when the captured features do not match fc's width")
VLLM_EMBED = S("vllm", "vllm/model_executor/models/qwen3_dflash.py", "497-503",
               "DFlash embedding: raw rows (mask_embedding.pt override), no input_embedding_scale")
VLLM_SHARE_EMBED = S("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "1418-1505",
                     "the draft uses the target's model.embed_tokens / model.embedding module")
VLLM_V2_SHARE_EMBED = S("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "37-77",
                        "V2 runner: the draft takes the target's embed_tokens / embedding")
VLLM_V2_EMBED = S("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "376-392",
                  "DFlash 2: raw rows x dflash_config.input_embedding_scale")
VLLM_V1_LOGITS = S("vllm", "vllm/model_executor/models/qwen3_dflash.py", "754-766",
                   "DFlash logits: only a top-level logit_scale, no output_multiplier / soft-cap")
VLLM_V2_LOGITS = S("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "401-404",
                   "DFlash 2 logits: dflash_config output_multiplier and final_logit_softcapping")
VLLM_BEAM_SOFTCAP = S("vllm", "vllm/models/beam/nvidia/dflash2.py", "563-567",
                      "DFlash2-Beam logits soft-capped at dflash_config final_logit_softcapping")
VLLM_MASK_V1 = S("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "355-380",
                 "mask id: dflash_config, then top-level; ValueError if absent")
VLLM_MASK_V2 = S("vllm", "vllm/v1/worker/gpu/spec_decode/utils.py", "92-114",
                 "mask id: dflash_config, then top-level; ValueError if absent")
VLLM_NEOX = S("vllm", "vllm/model_executor/models/qwen3_dflash.py", "326-331", "draft RoPE layout from top-level "
              "is_neox_style (default neox)")
VLLM_ROPE_DIM = S("vllm", "vllm/model_executor/layers/rotary_embedding/__init__.py", "63-72",
                  "rotary width from rope_parameters.rope_dim, else partial_rotary_factor x head_size")
VLLM_SPECULATORS = S("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "90-125",
                     "speculators dflash: aux ids captured as given; dflash_config.target_layer_ids = aux - 1")

# --- SGLang 0.5.23 -------------------------------------------------------------------------------------
SGL_IDS = S("sglang", "sglang/srt/speculative/dflash_utils.py", "556-585", "ids absent: the formula on the running "
            "target's depth; out-of-range id: ValueError")
SGL_IDS_FORMULA = S("sglang", "sglang/srt/speculative/dflash_utils.py", "348-385", "build_target_layer_ids")
SGL_TARGET_DEPTH = S("sglang", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py",
                     "220-250", "warns when num_target_layers differs; capture ids from the runtime depth")
SGL_DRAFT_FC = S("sglang", "sglang/srt/models/dflash.py", "747-759", "draft fc sized from the resolved ids")
SGL_MASK_CONFIG = S("sglang", "sglang/srt/speculative/dflash_utils.py", "677-700", "mask_token default <|MASK|>; "
                    "mask_token_id from dflash_config, then top-level")
SGL_MASK_RESOLVE = S("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1391-1469", "mask id checked against "
                     "the tokenizer's id for mask_token; absent: the tokenizer's, else the token is added")
SGL_EMBED = S("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "2572-2582", "block embedded with the target "
              "embedding module (raw table under dp-attention), times a scale no model defines")
SGL_EMBED_MODULE = S("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "222-230",
                     "the target's get_input_embeddings()")
SGL_LOGITS = S("sglang", "sglang/srt/speculative/dflash_utils.py", "651-655",
               "output_multiplier / final_logit_softcapping from dflash_config only")
SGL_V2_LOGITS = S("sglang", "sglang/srt/models/dflash.py", "1284-1302",
                  "applied to the DFlash 2 selector's candidate logits only (DFlash2DraftModel and its aliases)")
SGL_ROPE = S("sglang", "sglang/srt/models/dflash.py", "253-278", "config.partial_rotary_factor attribute, rope_dim "
             "in the rope parameters, rope_is_neox_style / is_neox_style")
SGL_ROPE_OLD = S("sglang", "sglang/srt/models/dflash.py", "251-259", "0.5.21-0.5.22: rotary_dim = head_dim "
                 "(rope_dim not read), config.partial_rotary_factor", version="0.5.22")
SGL_THETA = S("sglang", "sglang/srt/utils/hf_transformers/common.py", "513-517",
              "rope_parameters.rope_theta first, then config.rope_theta, default 10000")
SGL_BLOCK = S("sglang", "sglang/srt/speculative/dflash_utils.py", "608-612",
              "block_size: dflash_config, then top-level")

# --- speculators 0.9.0 ---------------------------------------------------------------------------------
SPEC_CONVERT = S("speculators", "speculators/convert/dflash/converter.py", "87-126", "z-lab -> speculators: block "
                 "size top-level first, ids from dflash_config only, aux = id + 1 minus the last layer")
SPEC_FC = S("speculators", "speculators/models/dflash/core.py", "122-126", "fc input = len(aux ids) x hidden")

# --- the draft-class registries (which families each engine loads: DF005, DF009) -------------------
REG_VLLM_DRAFTS = S("vllm", "vllm/model_executor/models/registry.py", "655-700", "draft classes")
REG_VLLM_RENAME = S("vllm", "vllm/transformers_utils/configs/eagle.py", "65-76", "method dflash renames")
REG_SGL_DRAFTS = S("sglang", "sglang/srt/models/dflash.py", "1317-1324", "draft classes")
REG_SGL_LILICORR = S("sglang", "sglang/srt/models/lilicorr.py", "575", "LiLiCorr")
REG_MLX_DRAFT = S("dflash", "dflash/model_mlx.py", "430-486", "the MLX draft loader")
REG_HF_ASSISTANT = S("transformers", "transformers/models/auto/modeling_auto.py", "409", "Muse-Glimmer assistant")
DRAFT_REGISTRIES = (REG_VLLM_DRAFTS, REG_VLLM_RENAME, REG_SGL_DRAFTS, REG_SGL_LILICORR, REG_MLX_DRAFT, REG_HF_ASSISTANT)

# hybrid targets: the serving engines commit recurrent state themselves (DF201, DF256)
SGL_HYBRID = S("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "2085-2130",
                         "DFLASH commits a hybrid target's mamba / linear-attention state after verify itself")
VLLM_HYBRID = S("vllm", "vllm/model_executor/layers/mamba/mamba_mixer2.py", "780-942",
                          "recurrent state kept per accepted token (num_accepted_tokens)")
# the speculators config reader (DF103, DF109)
SPECULATORS_IDS = S("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "114",
                               "config_dict['aux_hidden_state_layer_ids']: KeyError when absent")
