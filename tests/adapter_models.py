"""Tiny random-weight targets of the non-standard layouts (GPT-2, GPT-NeoX, OPT, Falcon, ...) and a
VLM wrapper, with matching tiny DFlash drafts, for the adapter tests. Built in the test; no downloads."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import torch

V = 32  # small vocabulary: a random draft's guesses are sometimes accepted
H = 32
N_LAYERS = 3
LAYER_IDS = (0, 1)  # valid for N_LAYERS = 3 (ids 0 .. N-2)
MASK = V - 1
_TOKENS = dict(bos_token_id=0, eos_token_id=None, pad_token_id=None)


def _configs() -> dict[str, Callable[[], Any]]:
    import transformers as T

    return {
        "gpt2": lambda: T.GPT2Config(n_embd=H, n_layer=N_LAYERS, n_head=2, vocab_size=V, n_positions=128, **_TOKENS),
        "gptj": lambda: T.GPTJConfig(n_embd=H, n_layer=N_LAYERS, n_head=2, rotary_dim=8, vocab_size=V,
                                     n_positions=128, **_TOKENS),
        "gpt_neo": lambda: T.GPTNeoConfig(hidden_size=H, num_layers=N_LAYERS, num_heads=2, vocab_size=V,
                                          max_position_embeddings=128, attention_types=[[["global"], N_LAYERS]],
                                          **_TOKENS),
        # n_head a multiple of 4: transformers before 5.2x splits CodeGen's qkv in mp_num=4 groups
        # (5.17 modeling_codegen.py:95 reshapes to n_head // 4 heads per group; 2 heads made that 0)
        "codegen": lambda: T.CodeGenConfig(n_embd=H, n_layer=N_LAYERS, n_head=4, rotary_dim=8, vocab_size=V,
                                           n_positions=128, n_ctx=128, **_TOKENS),
        "gpt_bigcode": lambda: T.GPTBigCodeConfig(n_embd=H, n_layer=N_LAYERS, n_head=2, vocab_size=V,
                                                  n_positions=128, **_TOKENS),
        "gpt_neox": lambda: T.GPTNeoXConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2,
                                            intermediate_size=64, vocab_size=V, max_position_embeddings=128, **_TOKENS),
        "opt": lambda: T.OPTConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2, ffn_dim=64,
                                   vocab_size=V, max_position_embeddings=128, word_embed_proj_dim=16,
                                   **dict(_TOKENS, pad_token_id=1)),
        "opt_plain": lambda: T.OPTConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2, ffn_dim=64,
                                         vocab_size=V, max_position_embeddings=128, **dict(_TOKENS, pad_token_id=1)),
        "falcon": lambda: T.FalconConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2,
                                         vocab_size=V, **_TOKENS),
        "bloom": lambda: T.BloomConfig(hidden_size=H, n_layer=N_LAYERS, n_head=2, vocab_size=V, **_TOKENS),
        "phi": lambda: T.PhiConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2,
                                   intermediate_size=64, vocab_size=V, max_position_embeddings=128, **_TOKENS),
        "llava": _llava_config,
    }


def _llava_config():
    import transformers as T

    text = T.LlamaConfig(hidden_size=H, num_hidden_layers=N_LAYERS, num_attention_heads=2, num_key_value_heads=1,
                         intermediate_size=64, vocab_size=V + 8, max_position_embeddings=128, head_dim=16, **_TOKENS)
    vision = T.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=32, patch_size=16, projection_dim=16)
    return T.LlavaConfig(text_config=text, vision_config=vision, image_token_index=V + 7)


LAYOUTS = tuple(k for k in ("gpt2", "gptj", "gpt_neo", "codegen", "gpt_bigcode", "gpt_neox", "opt", "opt_plain",
                            "falcon", "bloom", "phi", "llava"))


def tiny_model(name: str, seed: int = 0):
    """A random model of layout `name` in float32, eval mode, with peaked (trained-like) logits so
    that greedy choices are not near-ties that float noise between cached and uncached runs can flip."""
    import transformers as T

    T.logging.set_verbosity_error()
    cfg = _configs()[name]()
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    if name == "llava":
        model = T.LlavaForConditionalGeneration(cfg)
    else:
        model = T.AutoModelForCausalLM.from_config(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / math.sqrt(p.shape[-1])))
            elif "bias" in pname:
                p.zero_()
    return model.eval()


def draft_config(vocab: int = V, block_size: int = 4, layer_ids=LAYER_IDS, **extra: Any) -> dict[str, Any]:
    """A z-lab-format Qwen3-style draft for an H-wide, N_LAYERS-deep target."""
    cfg = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "vocab_size": vocab, "hidden_size": H,
        "intermediate_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
        "num_hidden_layers": 1, "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "attention_bias": False, "num_target_layers": N_LAYERS, "block_size": block_size,
        "dflash_config": {"mask_token_id": MASK, "target_layer_ids": list(layer_ids)},
    }
    cfg.update(extra)
    return cfg


def save_pair(tmp: Path, name: str, seed: int = 0, block_size: int = 4):
    """(model, target folder, draft folder): the target saved with safetensors, a random draft beside it."""
    from tests.tiny_dflash import draft_state, save_draft

    model = tiny_model(name, seed)
    target = tmp / f"target-{name}"
    model.save_pretrained(str(target), safe_serialization=True)
    vocab = model.get_input_embeddings().weight.shape[0]
    dcfg = draft_config(vocab=vocab, block_size=block_size)
    draft = save_draft(tmp / f"draft-{name}", dcfg, draft_state(dcfg, seed + 100))
    return model, target, draft


@torch.no_grad()
def reference_greedy(model, prompt, n: int) -> list[int]:
    """The target's own greedy continuation: full forward passes, no cache, no adapter."""
    ids = torch.tensor([list(prompt)])
    out: list[int] = []
    for _ in range(n):
        nxt = int(model(input_ids=ids, use_cache=False).logits[0, -1].argmax())
        out.append(nxt)
        ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    return out


# ---- MLX (mlx-lm) layouts -------------------------------------------------------------------

MLX_V = 32
# model_type -> a tiny mlx-lm config of a layout the DFlash MLX loader cannot read (3 layers, hidden 32)
MLX_CONFIGS: dict[str, dict[str, Any]] = {
    "gpt2": dict(model_type="gpt2", n_ctx=256, n_embd=H, n_head=2, n_layer=N_LAYERS, n_positions=256,
                 layer_norm_epsilon=1e-5, vocab_size=MLX_V),
    "gptj": dict(model_type="gptj", n_embd=H, vocab_size=MLX_V, n_positions=256, n_head=2, rotary_dim=8,
                 n_layer=N_LAYERS),
    "gpt_neox": dict(model_type="gpt_neox", max_position_embeddings=256, hidden_size=H, num_attention_heads=2,
                     num_hidden_layers=N_LAYERS, layer_norm_eps=1e-5, vocab_size=MLX_V, rotary_emb_base=10000,
                     rotary_pct=0.25),
    "gpt_bigcode": dict(model_type="gpt_bigcode", n_embd=H, n_layer=N_LAYERS, n_inner=64, n_head=2, n_positions=256,
                        layer_norm_epsilon=1e-5, vocab_size=MLX_V),
    "qwen": dict(model_type="qwen", hidden_size=H, num_attention_heads=2, num_hidden_layers=N_LAYERS, kv_channels=16,
                 max_position_embeddings=256, intermediate_size=128, vocab_size=MLX_V),
    "exaone": dict(model_type="exaone", hidden_size=H, num_layers=N_LAYERS, intermediate_size=64,
                   num_attention_heads=2, vocab_size=MLX_V, rope_theta=10000.0, layer_norm_epsilon=1e-5,
                   num_key_value_heads=1, tie_word_embeddings=False),
    "dbrx": dict(model_type="dbrx", vocab_size=MLX_V, d_model=H, n_layers=N_LAYERS, n_heads=2,
                 ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 2, "moe_top_k": 1},
                 attn_config={"kv_n_heads": 1, "clip_qkv": 8, "rope_theta": 10000}),
    "internlm2": dict(model_type="internlm2", hidden_size=H, num_hidden_layers=N_LAYERS, intermediate_size=64,
                      num_attention_heads=2, num_key_value_heads=1, rms_norm_eps=1e-6, vocab_size=MLX_V,
                      max_position_embeddings=256, rope_theta=10000.0, bias=False, tie_word_embeddings=False),
    "openelm": dict(model_type="openelm", head_dim=16, num_transformer_layers=N_LAYERS, model_dim=H,
                    vocab_size=MLX_V, ffn_dim_divisor=8, num_query_heads=[2] * N_LAYERS,
                    num_kv_heads=[1] * N_LAYERS, ffn_multipliers=[2.0] * N_LAYERS),
    "plamo": dict(model_type="plamo", hidden_size=H, num_hidden_layers=N_LAYERS, intermediate_size=64,
                  num_attention_heads=2, rms_norm_eps=1e-6, vocab_size=MLX_V, n_shared_head=2),
}


def mlx_draft_config(block_size: int = 4) -> dict[str, Any]:
    return draft_config(vocab=MLX_V, block_size=block_size)


def one_thread():
    """A fixture body: tiny models run fastest on one thread, and a shared CI box is not slowed by
    spinning OpenMP workers; restores the previous setting afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
