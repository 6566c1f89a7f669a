"""A tiny random-weight Qwen3 target and a DFlash draft for it (z-lab layout): the pair
`examples/make_tiny_pair.py` writes into examples/tiny-qwen3, and the tests and benchmarks build.

Weight names are written out here from the published checkpoint layout, independently of the
runtime's loaders and of the dflash package, so that loading them tests both loaders. torch,
transformers and safetensors are imported inside the functions.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    import torch

__all__ = ["draft_config", "draft_state", "save_draft", "save_tokenizer", "target_config", "tiny_target"]


def target_config(vocab: int = 64, hidden: int = 32, layers: int = 4, heads: int = 4, kv_heads: int = 2,
                  head_dim: int = 8, intermediate: int = 64, **extra: Any) -> dict[str, Any]:
    cfg = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": vocab, "hidden_size": hidden,
        "intermediate_size": intermediate, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "head_dim": head_dim, "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
        "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
    }
    cfg.update(extra)
    return cfg


def tiny_target(seed: int = 0, std: float = 0.5, **config: Any):
    """A random Qwen3ForCausalLM in float32, eval mode. Larger-than-default weights make its
    next-token distributions peaked, like a trained model's."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen3Config(**target_config(**config))
    cfg._attn_implementation = "sdpa"
    model = Qwen3ForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                continue
            p.copy_(torch.randn(p.shape, generator=gen) * (std if p.dim() == 1 else std * 4 / math.sqrt(p.shape[-1])))
    return model.eval()


def draft_config(target_cfg: dict[str, Any], *, version: int = 1, block_size: int = 8, layers: int = 2,
                 target_layer_ids: Sequence[int] = (0, 2), mask_token_id: Optional[int] = None,
                 dflash_extra: Optional[dict[str, Any]] = None, **extra: Any) -> dict[str, Any]:
    keys = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
            "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "hidden_act")
    cfg = {k: target_cfg[k] for k in keys}
    dflash = {"mask_token_id": target_cfg["vocab_size"] - 1 if mask_token_id is None else mask_token_id,
              "target_layer_ids": list(target_layer_ids), "block_size": block_size}
    if version == 2:
        dflash.update(conv_kernel_size=3, conv_group_size=8, selector_rank=4, selector_top_k=6)
    dflash.update(dflash_extra or {})
    cfg.update(
        architectures=["DFlash2DraftModel" if version == 2 else "DFlashDraftModel"], model_type="qwen3",
        num_hidden_layers=layers, num_target_layers=target_cfg["num_hidden_layers"], attention_bias=False,
        dflash_config=dflash,
    )
    cfg.update(extra)
    return cfg


def draft_state(cfg: dict[str, Any], seed: int = 0, std: float = 0.5) -> dict[str, "torch.Tensor"]:
    """Random weights under the z-lab names (v2 codebooks stored bare, without `.weight`)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    h, d = cfg["hidden_size"], cfg["head_dim"]
    nh, kvh, inter = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    n_ids = len(cfg["dflash_config"]["target_layer_ids"])
    shapes: dict[str, tuple[int, ...]] = {"fc.weight": (h, n_ids * h), "hidden_norm.weight": (h,), "norm.weight": (h,)}
    dflash = cfg["dflash_config"]
    v2 = cfg["architectures"] == ["DFlash2DraftModel"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (nh * d, h), p + "self_attn.k_proj.weight": (kvh * d, h),
            p + "self_attn.v_proj.weight": (kvh * d, h), p + "self_attn.o_proj.weight": (h, nh * d),
            p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
            p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
            p + "mlp.down_proj.weight": (h, inter),
        })
        if v2:
            k, groups = dflash["conv_kernel_size"], h // dflash["conv_group_size"]
            for conv in ("attention_conv", "mlp_conv"):
                shapes[p + f"{conv}.base_kernel"] = (2, k, h)
                shapes[p + f"{conv}.kernel_projection.weight"] = (2 * k * groups, h)
    if v2:
        r, v = dflash["selector_rank"], cfg["vocab_size"]
        shapes.update({"candidate_selector.predecessor_codebook": (v, r),
                       "candidate_selector.successor_codebook": (v, r),
                       "candidate_selector.hidden_projection.weight": (r, h)})
    state = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            state[name] = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("base_kernel"):
            state[name] = 0.3 * torch.randn(shape, generator=gen)
        elif len(shape) == 2 and "codebook" not in name:
            state[name] = torch.randn(shape, generator=gen) * (std * 2 / math.sqrt(shape[1]))
        else:
            state[name] = torch.randn(shape, generator=gen) * std
    return state


def save_draft(folder: Path, cfg: dict[str, Any], state: dict[str, "torch.Tensor"]) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    return folder


def save_tokenizer(folder: Path, vocab: int) -> None:
    """A word-level tokenizer over the words w0 .. w{vocab-1} (whitespace split; unknown -> w0)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0").save_pretrained(str(folder))
