"""Tiny random targets of every causal-LM model type of the installed transformers, and tiny drafts for
them in each engine's format: the zoo that benchmarks/bench_zoo_truth.py runs and tests/test_zoo_truth.py
samples.

A target is the model type's own config class with its sizes cut down (hidden 64, 4 layers, vocab 128,
...), built with random weights (seeded) and saved with save_pretrained; a type whose config or model
will not build at that size is reported as such, never forced. torch and transformers are imported
inside the functions.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

__all__ = ["causal_lm_types", "tiny_config", "build_target", "save_zlab_draft", "save_assistant_draft",
           "HYBRID_TYPES", "SAMPLE"]

VOCAB = 128
LAYERS = 4
# Cut sizes: config key -> value (applied where the config class knows the key).
_SIZES = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers"), LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model", "dim", "emb_dim", "embed_dim", "n_embed"), 64),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads"), 4),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "d_ff", "decoder_ffn_dim", "moe_intermediate_size",
                     "shared_expert_intermediate_size", "expert_intermediate_size", "d_inner"), 128),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "top_k", "moe_topk"), 2),
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": VOCAB, "max_position_embeddings": 512,
    "n_positions": 512, "n_ctx": 512, "max_seq_len": 512,
    "first_k_dense_replace": 1, "n_shared_experts": 1, "kv_lora_rank": 16, "q_lora_rank": 32,
    "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16, "qk_head_dim": 16,
    "sliding_window": 64, "attention_chunk_size": 64,
    # keys whose defaults only fit full-size models (a group count above the 4 experts, a rotary or indexer
    # width above the head, a linear-attention width, more routed experts per token than there are)
    **dict.fromkeys(("n_group", "num_expert_group", "topk_group"), 1),
    **dict.fromkeys(("moe_k", "num_experts_per_token"), 2),
    "rotary_dim": 8, "linear_num_heads": 4, "linear_num_key_heads": 4, "linear_head_dim": 16,
    "layer_group_size": 2, "index_head_dim": 16, "index_n_heads": 4,
    "index_topk": 64,  # above the zoo's context, as a full-size model's 2048 is above most prompts (DF211)
}
# Keys set even where the class defaults them to None (a None the model then uses as a number).
_EVEN_IF_NONE = ("num_key_value_heads", "num_experts_per_tok", "head_dim")
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "cls_token_id",
              "decoder_start_token_id", "mask_token_id", "unk_token_id")
# Pattern strings with one letter per layer (Nemotron-H "M-M*", Falcon-H1 has none): layer kinds kept so a
# tiny hybrid still has both kinds.
_PATTERNS = ("hybrid_override_pattern", "layers_block_type", "attn_layer_pattern")

# Model types whose target keeps a recurrent / linear-attention / SSM state (the hybrids the sample must hold).
HYBRID_TYPES = ("qwen3_5_text", "qwen3_next", "falcon_h1", "jamba", "nemotron_h", "lfm2", "zamba2", "bamba",
                "granitemoehybrid", "mamba", "mamba2")
# The CI sample: attention-only layouts the locator must read (BERT-style, CTRL, DBRX, GPT-2, XLM) and hybrids.
SAMPLE = ("qwen3", "llama", "gpt2", "ctrl", "dbrx", "bert", "xlm", "qwen3_5_text", "qwen3_next", "falcon_h1",
          "jamba", "zamba2")


# Per-type constraints the generic cut breaks (each config class's own validation says so).
_FIXES: dict[str, dict[str, Any]] = {
    "mamba2": {"num_heads": 8, "head_dim": 16, "expand": 2, "n_groups": 1},  # hidden * expand == heads * head_dim
    "glm5_next": {"num_key_value_heads": 4},
    "nemotron": {"num_key_value_heads": 2},  # None is not "as many as the query heads" there
    "dots3_note_text": {"num_key_value_heads": 4},  # must equal the query heads
    "zaya": {"num_experts_per_tok": 1},  # the only value the class supports
    "kolibri1_1": {"index_num_heads": 2},  # at most the key heads
    "lfm2_moe": {"layer_types": ["conv", "full_attention"] * 2},  # the default has none
    "gpt_neo": {"attention_types": [[["global", "local"], 2]]},  # must add up to the depth
    "dory": {"n_input_layers": 1, "n_recurrent_layers": 2, "n_output_layers": 1,  # the three add up to the depth
             "layer_types": ["sliding_attention", "full_attention"] * 2},  # a default list with "mlp" halves the depth
    # the default configs have no attention layer at all (published Bamba / Granite-4.0-H have some)
    "bamba": {"attn_layer_indices": [1, 3]},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"] * 2},
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1},  # num_attention_heads == num_key_value_heads
    "dbrx": {"ffn_config": {"hidden_size": 64, "ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2},
             "attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}},  # clip_qkv None crashes
}


def causal_lm_types() -> list[str]:
    """Every model type the installed transformers maps to a causal-LM class, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _fit_pattern(value: Any, layers: int) -> Any:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        kinds = list(dict.fromkeys(value))  # first occurrence order
        out = (kinds * layers)[:layers]
        return out
    if isinstance(value, str) and len(value) > layers:
        kinds = "".join(dict.fromkeys(value.replace("-", "")))
        return (kinds * layers)[:layers] if kinds else value[:layers]
    return value


def tiny_config(model_type: str) -> Any:
    """The model type's config class at a tiny size (ValueError/TypeError/... where it cannot be built)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    default = cls()
    known = default.to_dict()
    text_key = next((k for k in ("text_config", "llm_config", "language_config") if isinstance(known.get(k), dict)),
                    None)
    kwargs: dict[str, Any] = {}
    scope = known[text_key] if text_key else known
    for key, value in _SIZES.items():
        if key in scope and (scope[key] is not None or key in _EVEN_IF_NONE):
            kwargs[key] = value
    if "qk_rope_head_dim" in scope and "head_dim" in scope:  # MLA: head_dim is the rotary part's width
        kwargs["head_dim"] = _SIZES["qk_rope_head_dim"]
    if "kv_lora_rank" in scope and "num_key_value_heads" in scope:  # MLA expands keys to every query head: a
        kwargs["num_key_value_heads"] = _SIZES["num_attention_heads"]  # smaller count breaks multi-token calls
    layers_default = next((scope[k] for k in ("num_hidden_layers", "n_layer", "num_layers") if
                           isinstance(scope.get(k), int)), None)
    for key, value in scope.items():  # per-layer number lists sized for the default depth
        if (key not in kwargs and isinstance(value, list) and layers_default and len(value) == layers_default
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
            kwargs[key] = value[:LAYERS]
    if "num_key_value_heads" in kwargs and scope.get("num_key_value_heads") is None and "multi_query" not in scope:
        kwargs.pop("num_key_value_heads")
    for key in _TOKEN_IDS:
        v = scope.get(key)
        if isinstance(v, int) and v >= VOCAB:
            kwargs[key] = 1 + _TOKEN_IDS.index(key) % 3
        elif isinstance(v, list):
            kwargs[key] = [i if i < VOCAB else 2 for i in v if isinstance(i, int)]
    for key in _PATTERNS:
        if key in scope:
            kwargs[key] = _fit_pattern(scope[key], LAYERS)
    if isinstance(scope.get("layer_types"), list):
        kwargs["layer_types"] = _fit_pattern(scope["layer_types"], LAYERS)
    if "is_decoder" in scope:  # BERT-style *LMHeadModel: a causal decoder only with is_decoder=True
        kwargs["is_decoder"] = True
    if isinstance(scope.get("per_layer_config"), dict):  # overrides keyed by layer index: only the kept layers
        kwargs["per_layer_config"] = {k: v for k, v in scope["per_layer_config"].items()
                                      if str(k).lstrip("-").isdigit() and int(k) < LAYERS}
    for key, value in _FIXES.get(model_type, {}).items():
        kwargs[key] = value
    if text_key:
        cfg = cls(**{text_key: dict(scope, **kwargs)})
    else:
        cfg = cls(**kwargs)
    return cfg


def build_target(model_type: str, folder: Path, seed: int = 0) -> dict[str, Any]:
    """Build, seed and save a tiny target; returns its config.json as written."""
    import torch
    from transformers import AutoModelForCausalLM

    cfg = tiny_config(model_type)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # peaked next-token distributions, like a trained model's
        for name, p in model.named_parameters():
            if p.dim() >= 2 and p.is_floating_point() and "norm" not in name:
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / math.sqrt(p.shape[-1])))
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    return json.loads((folder / "config.json").read_text())


def rope_theta(folder: Path) -> float:
    """The target's RoPE base (the draft is given the same one: a different base is DF117, an acceptance loss)."""
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(folder)).get_text_config(decoder=True)
    rope = getattr(cfg, "rope_parameters", None) or {}
    if isinstance(rope, dict) and isinstance(rope.get("full_attention"), dict):  # per layer type (Gemma 3)
        rope = rope["full_attention"]
    theta = rope.get("rope_theta") if isinstance(rope, dict) else None
    theta = theta or getattr(cfg, "rope_theta", None)
    return float(theta) if isinstance(theta, (int, float)) else 10000.0


def text_sizes(folder: Path) -> tuple[int, int, int]:
    """(hidden size, layers, vocab) of a saved target (the text config's, for a wrapper)."""
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(folder)).get_text_config(decoder=True)
    hidden = next(getattr(cfg, k) for k in ("hidden_size", "n_embd", "d_model", "dim", "emb_dim")
                  if isinstance(getattr(cfg, k, None), int))
    layers = next(getattr(cfg, k) for k in ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
                  if isinstance(getattr(cfg, k, None), int))
    return hidden, layers, int(cfg.vocab_size)


def _draft_base(hidden: int, layers: int, vocab: int, layer_ids: tuple[int, ...],
                theta: float = 10000.0) -> dict[str, Any]:
    from dflash_compat.runtime.tiny_pair import draft_config

    heads = 4
    tgt = {"vocab_size": vocab, "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_attention_heads": heads,
           "num_key_value_heads": 2, "head_dim": hidden // heads, "max_position_embeddings": 512,
           "rms_norm_eps": 1e-6, "rope_theta": theta, "hidden_act": "silu", "num_hidden_layers": layers}
    return draft_config(tgt, block_size=4, layers=1, target_layer_ids=layer_ids, mask_token_id=vocab - 1)


def layer_ids(layers: int) -> tuple[int, ...]:
    return (0, layers - 2) if layers >= 3 else (0,)


def save_zlab_draft(folder: Path, hidden: int, layers: int, vocab: int, seed: int = 1,
                    theta: float = 10000.0, embed_scale: Optional[float] = None) -> Path:
    """A z-lab v1 draft (the dflash reference's format) for a target of these sizes; `embed_scale`: the
    target's embedding scale the draft mirrors (Gemma: sqrt(hidden), DF121)."""
    from dflash_compat.runtime.tiny_pair import draft_state, save_draft

    cfg = _draft_base(hidden, layers, vocab, layer_ids(layers), theta)
    if embed_scale is not None:
        cfg["dflash_config"]["input_embedding_scale"] = embed_scale
    return save_draft(folder, cfg, draft_state(cfg, seed))


def save_assistant_draft(folder: Path, hidden: int, layers: int, vocab: int, seed: int = 1,
                         mask_token_id: Optional[int] = None, theta: float = 10000.0) -> Path:
    """A Muse-Glimmer assistant (transformers' native DFlash format) for a target of these sizes."""
    from dflash_compat.runtime.tiny_pair import draft_state, save_draft

    zlab = _draft_base(hidden, layers, vocab, layer_ids(layers), theta)
    dflash = zlab.pop("dflash_config")
    cfg = {k: v for k, v in zlab.items() if k not in ("vocab_size", "num_target_layers", "attention_bias",
                                                       "rope_theta")}
    cfg.update(architectures=["MuseGlimmerAssistantModel"], model_type="muse_glimmer_assistant",
               block_size=dflash["block_size"], mask_token_id=dflash["mask_token_id"] if mask_token_id is None
               else mask_token_id, target_layer_ids=dflash["target_layer_ids"],
               layer_types=["sliding_attention"] * cfg["num_hidden_layers"], sliding_window=2048,
               rope_parameters={"rope_type": "default", "rope_theta": theta})
    names = {"fc.weight": "encoder.fc.weight", "hidden_norm.weight": "encoder.output_norm_enc.weight"}
    state = {names.get(k, k): v for k, v in draft_state(dict(zlab, dflash_config=dflash), seed).items()}
    return save_draft(folder, cfg, state)
