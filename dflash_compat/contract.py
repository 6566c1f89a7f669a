"""Constants of the draft/target contract that specs, probes, adapters, rules and runtimes share.

One copy of each: a module that needs one of these imports it from here. Pure data, no imports,
so any layer of the pipeline may depend on it; the one list derived from the engines' code
(RECURRENT_MODEL_TYPES) is read from the engine facts (dflash_compat.engines.store) on first use.
"""

from __future__ import annotations

__all__ = [
    "TEXT_CONFIG_KEYS",
    "DEFAULT_BLOCK_SIZE",
    "ATTENTION_LAYER_TYPES",
    "DRAFT_LAYER_TYPES",
    "RECURRENT_MODEL_TYPES",  # noqa: F822 (module __getattr__, read on first use)
    "FINAL_NORM_NAMES",
    "REFERENCE_CALL_ARGS",
    "MLX_REFERENCE_EMBED_PATHS",
    "MLX_REFERENCE_HEAD_PATHS",
    "MLX_REFERENCE_LAYERS_PATHS",
    "MLX_REFERENCE_REPLAY_MODULES",
    "MLX_RUNTIME_REPLAY_MODULES",
    "MLX_CROP_CACHES",
    "MLX_ROTATING_CACHES",
]


# Where multimodal wrappers keep the language model's config.
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")

# Per-layer `layer_types` values that are ordinary attention: their cache entries are per-position
# keys/values, so cropping the cache rolls them back exactly. `indexed_attention` (DSA: DeepSeek-V3.2,
# GLM-MoE-DSA) keeps per-position indexer keys beside them, cropped with them (transformers 5.25.0
# cache_utils.py:316, :378-386 DynamicIndexedLayer.crop; 5.24.0 :316, the same layer).
ATTENTION_LAYER_TYPES = frozenset(
    {"full_attention", "sliding_attention", "chunked_attention", "attention", "global", "local",
     "indexed_attention"}
)

# Config keys of targets that apply their decoder layers more than once per token (HRM: H_cycles / L_cycles,
# transformers 5.25.0 models/hrm_text/configuration_hrm_text.py:45-52, whose num_hidden_layers counts layer
# applications; Dory: n_recurrent_loops, models/dory/configuration_dory.py:81). Their output_hidden_states has one
# entry per application, which is what a draft's target_layer_ids index.
LOOP_KEYS = ("H_cycles", "L_cycles", "n_recurrent_loops")

# The block size a draft without one runs at (the dflash reference, SGLang and the MLX port all assume it).
DEFAULT_BLOCK_SIZE = 16

# The layer types a DFlash draft may declare (every engine's draft loader knows only these two).
DRAFT_LAYER_TYPES = ("full_attention", "sliding_attention")

# RECURRENT_MODEL_TYPES (a frozenset, read on first use by the module __getattr__ below): model
# types whose layers are wholly or partly recurrent / state-space / linear attention / conv, or that
# transformers marks stateful, by the names transformers and mlx-lm use: cropping a KV cache cannot
# remove rejected tokens from their state. A per-layer `layer_types` list refines this when present.
# Derived from the engines' code (data/engine_support.json "common", docs/engine-facts.md).


# Attribute names of a decoder's final norm (Llama/Qwen `norm`, GPT-2 `ln_f`, OPT `final_layer_norm`).
FINAL_NORM_NAMES = ("norm", "final_layernorm", "final_layer_norm", "ln_f", "norm_f", "final_norm")

# The keyword arguments the transformers reference runtime passes to the target's forward.
REFERENCE_CALL_ARGS = (
    "input_ids", "position_ids", "past_key_values", "cache", "use_cache", "logits_to_keep", "output_hidden_states",
)

# Where the DFlash MLX port (dflash.model_mlx) looks, in this order, relative to the mlx-lm Model.
MLX_REFERENCE_EMBED_PATHS = ("embed_tokens", "model.embed_tokens", "language_model.model.embed_tokens")
MLX_REFERENCE_HEAD_PATHS = ("lm_head", "language_model.lm_head")  # else embed_tokens.as_linear
MLX_REFERENCE_LAYERS_PATHS = ("model.layers", "language_model.layers", "layers")
# Recurrent modules whose state can be rebuilt by replaying the accepted tokens: the reference
# patches only Qwen3.5's GatedDeltaNet; our runtime replays any GatedDeltaNet through its own call.
MLX_REFERENCE_REPLAY_MODULES = ("mlx_lm.models.qwen3_5.GatedDeltaNet",)
MLX_RUNTIME_REPLAY_MODULES = MLX_REFERENCE_REPLAY_MODULES + ("mlx_lm.models.qwen3_next.Qwen3NextGatedDeltaNet",)
# mlx-lm cache classes whose entries are per-position keys/values: cutting them is exact.
MLX_CROP_CACHES = frozenset({"KVCache", "QuantizedKVCache", "ConcatenateKVCache", "ChunkedKVCache"})
MLX_ROTATING_CACHES = frozenset({"RotatingKVCache"})


def __getattr__(name: str):
    # PEP 562: `from dflash_compat.contract import RECURRENT_MODEL_TYPES` reads the engine facts on
    # first use only, so importing the contract stays free of I/O.
    if name == "RECURRENT_MODEL_TYPES":
        from dflash_compat.engines.store import recurrent_model_types

        value = recurrent_model_types()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
