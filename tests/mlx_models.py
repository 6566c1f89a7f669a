"""Tiny mlx-lm targets and DFlash drafts for the MLX tests, built in the test (no downloads).

Vocabularies are small (32) so that a random draft's guesses are sometimes accepted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

V = 32
MASK = 30  # mask token id of the drafts (a row of every target's embedding)
EOS = 31

_BASE = dict(hidden_size=32, num_hidden_layers=4, intermediate_size=64, num_attention_heads=2,
             num_key_value_heads=1, head_dim=16, rms_norm_eps=1e-6, vocab_size=V,
             max_position_embeddings=512, rope_theta=10000.0, tie_word_embeddings=False)
_GDN = dict(linear_num_value_heads=2, linear_num_key_heads=1, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_conv_kernel_dim=4, full_attention_interval=2)

# model_type -> a tiny config mlx-lm can build (and our inspection tests read)
TARGETS: dict[str, dict[str, Any]] = {
    "qwen3": dict(_BASE, model_type="qwen3"),
    "qwen3_tied": dict(_BASE, model_type="qwen3", tie_word_embeddings=True),
    "qwen3_5": dict(_BASE, **_GDN, model_type="qwen3_5",
                    rope_parameters={"rope_theta": 10000.0, "partial_rotary_factor": 0.5, "type": "default"}),
    "qwen3_next": dict(_BASE, **_GDN, model_type="qwen3_next", num_experts=0, num_experts_per_tok=0,
                       decoder_sparse_step=1, shared_expert_intermediate_size=0, moe_intermediate_size=0,
                       norm_topk_prob=True, partial_rotary_factor=0.5, mlp_only_layers=[]),
    "llama_swa": dict(_BASE, model_type="llama", sliding_window=4,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"]),
    "gemma3_text": dict(_BASE, model_type="gemma3_text", sliding_window=4, sliding_window_pattern=2,
                        query_pre_attn_scalar=16),
    "llama4_text": dict(_BASE, model_type="llama4_text", intermediate_size_mlp=64, no_rope_layers=[1, 1, 1, 1],
                        use_qk_norm=False),
    "internlm2": dict(_BASE, model_type="internlm2", bias=False),
    "hunyuan": dict(_BASE, model_type="hunyuan", attention_bias=False, moe_topk=1, num_experts=1,
                    num_shared_expert=1, use_mixed_mlp_moe=False, use_qk_norm=True, use_cla=False,
                    cla_share_factor=2, rope_scaling={"type": "dynamic", "factor": 1.0, "alpha": 1.0}),
    "lfm2": dict(model_type="lfm2", vocab_size=V, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                 num_key_value_heads=1, max_position_embeddings=512, norm_eps=1e-5, conv_bias=False, conv_L_cache=3,
                 block_dim=32, block_multiple_of=16, block_ffn_dim_multiplier=1.0, block_auto_adjust_ff_dim=False,
                 intermediate_size=64,
                 layer_types=["conv", "full_attention", "conv", "full_attention"]),
    "gemma4_text": dict(model_type="gemma4_text", hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                        num_attention_heads=2, head_dim=16, global_head_dim=16, vocab_size=V,
                        vocab_size_per_layer_input=V, num_key_value_heads=1, num_kv_shared_layers=0,
                        hidden_size_per_layer_input=0, sliding_window=4, sliding_window_pattern=2),
    "mamba": dict(model_type="mamba", vocab_size=V, hidden_size=32, intermediate_size=64, state_size=4,
                  num_hidden_layers=2, conv_kernel=4, use_bias=False, use_conv_bias=True, time_step_rank=4,
                  tie_word_embeddings=True),
}


def target_config(name: str, **changes: Any) -> dict[str, Any]:
    cfg = json.loads(json.dumps(TARGETS[name]))
    cfg.update(changes)
    return cfg


def draft_config(target: dict[str, Any], *, layer_ids=(0, 2), block_size: int = 4, layers: int = 1,
                 version: int = 1, **changes: Any) -> dict[str, Any]:
    """A z-lab-format draft config for `target` (hidden size, vocab and RoPE inherited)."""
    text = target.get("text_config", target)
    hidden = text["hidden_size"]
    cfg: dict[str, Any] = {
        "architectures": ["DFlash2DraftModel" if version == 2 else "DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "intermediate_size": 2 * hidden,
        "vocab_size": text["vocab_size"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "max_position_embeddings": 512,
        "hidden_act": "silu",
        "attention_bias": False,
        "num_target_layers": text["num_hidden_layers"],
        "block_size": block_size,
        "dflash_config": {"target_layer_ids": list(layer_ids), "mask_token_id": MASK},
    }
    if version == 2:
        cfg["dflash_config"].update(conv_kernel_size=3, conv_group_size=8, selector_rank=4, selector_top_k=4)
    cfg.update(changes)
    return cfg


def write_config(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def build_target(name_or_config: Any, seed: int = 0, scale: float = 1.0):
    """A random-weight mlx-lm model (parameters evaluated) for a TARGETS name or a config."""
    import mlx.core as mx
    from mlx.utils import tree_map
    from mlx_lm.utils import _get_classes

    cfg = target_config(name_or_config) if isinstance(name_or_config, str) else name_or_config
    model_cls, args_cls = _get_classes(cfg)
    mx.random.seed(seed)
    model = model_cls(args_cls.from_dict(dict(cfg)))
    if scale != 1.0:
        model.update(tree_map(lambda p: p * scale if p.ndim > 1 else p, model.parameters()))
    mx.eval(model.parameters())
    return model


def save_target(folder: Path, model: Any, config: dict[str, Any]) -> Path:
    """config.json + model.safetensors in mlx-lm's layout (what `mlx_lm.load` reads back)."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    write_config(folder, config)
    mx.save_safetensors(str(folder / "model.safetensors"), dict(tree_flatten(model.parameters())),
                        metadata={"format": "mlx"})
    return folder


def random_draft_weights(config: dict[str, Any], seed: int = 0, std: float = 0.5) -> dict[str, Any]:
    """z-lab-format tensors (names as published) for a draft config, as mx arrays (float32)."""
    import mlx.core as mx

    mx.random.seed(seed)
    h = config["hidden_size"]
    d = config["head_dim"]
    nh, nkv = config["num_attention_heads"], config["num_key_value_heads"]
    inter = config["intermediate_size"]
    ids = config["dflash_config"]["target_layer_ids"]

    def w(*shape):
        return mx.random.normal(shape) * (std / shape[-1] ** 0.5)

    def norm(n):
        return 1.0 + 0.1 * mx.random.normal((n,))

    out = {"fc.weight": w(h, len(ids) * h), "hidden_norm.weight": norm(h), "norm.weight": norm(h)}
    dfl = config["dflash_config"]
    for i in range(config["num_hidden_layers"]):
        p = f"layers.{i}."
        out.update({
            p + "input_layernorm.weight": norm(h),
            p + "post_attention_layernorm.weight": norm(h),
            p + "self_attn.q_proj.weight": w(nh * d, h),
            p + "self_attn.k_proj.weight": w(nkv * d, h),
            p + "self_attn.v_proj.weight": w(nkv * d, h),
            p + "self_attn.o_proj.weight": w(h, nh * d),
            p + "self_attn.q_norm.weight": norm(d),
            p + "self_attn.k_norm.weight": norm(d),
            p + "mlp.gate_proj.weight": w(inter, h),
            p + "mlp.up_proj.weight": w(inter, h),
            p + "mlp.down_proj.weight": w(h, inter),
        })
        if "conv_kernel_size" in dfl:
            k, g = dfl["conv_kernel_size"], h // dfl["conv_group_size"]
            for conv in ("attention_conv", "mlp_conv"):
                out[p + f"{conv}.base_kernel"] = 0.3 * mx.random.normal((2, k, h))
                out[p + f"{conv}.kernel_projection.weight"] = w(2 * k * g, h)
    if "selector_rank" in dfl:
        r = dfl["selector_rank"]
        out["candidate_selector.predecessor_codebook"] = mx.random.normal((config["vocab_size"], r))
        out["candidate_selector.successor_codebook"] = mx.random.normal((config["vocab_size"], r))
        out["candidate_selector.hidden_projection.weight"] = w(r, h)
    mx.eval(out)
    return out


def save_draft(folder: Path, config: dict[str, Any], seed: int = 0, weights: Optional[dict] = None) -> Path:
    import mlx.core as mx

    write_config(folder, config)
    weights = weights if weights is not None else random_draft_weights(config, seed)
    mx.save_safetensors(str(folder / "model.safetensors"), weights)
    return folder


def make_tokenizer(vocab_size: int = V, eos: int = EOS):
    """A word-level tokenizer over "t0".."t{V-1}" (transformers fast tokenizer, built offline)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=f"t{eos}", unk_token="t0")


def save_tokenizer(folder: Path) -> None:
    """make_tokenizer() saved beside a target (transformers picks its class by the folder's
    model_type: fine for qwen3 / llama, not for qwen3_5, whose tokenizer class rebuilds it)."""
    make_tokenizer().save_pretrained(str(folder))


def mlx_lm_greedy(model: Any, prompt: list[int], max_tokens: int) -> list[int]:
    """mlx-lm's own greedy generation (generate_step with an argmax sampler)."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    steps = generate_step(mx.array(prompt), model, max_tokens=max_tokens, sampler=lambda x: mx.argmax(x, axis=-1))
    return [int(t) for t, _ in steps]
