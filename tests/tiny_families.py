"""Tiny random-weight drafts of every DFlash draft family, saved in each family's own layout (config keys and
tensor names written out here from the published layouts, not from the runtime's loaders).

Built on the z-lab builders of dflash_compat.runtime.tiny_pair; torch is imported by those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from dflash_compat.runtime.tiny_pair import draft_config, draft_state, save_draft

__all__ = ["assistant_config", "assistant_state", "FAMILY_BUILDERS", "save_family"]


def assistant_config(target_cfg: dict[str, Any], *, block_size: int = 4, layers: int = 2,
                     target_layer_ids=(0, 2), mask_token_id=None, sliding_window: int = 2048,
                     **extra: Any) -> dict[str, Any]:
    """A Muse-Glimmer assistant config (the published one's layout, tests/fixtures/families/assistant-config.json):
    contract keys top-level, no dflash_config, no vocab_size, every layer sliding, RoPE in rope_parameters."""
    cfg = draft_config(target_cfg, block_size=block_size, layers=layers, target_layer_ids=target_layer_ids,
                       mask_token_id=mask_token_id)
    dflash = cfg.pop("dflash_config")
    for key in ("vocab_size", "num_target_layers", "attention_bias", "rope_theta"):
        cfg.pop(key)
    cfg.update(architectures=["MuseGlimmerAssistantModel"], model_type="muse_glimmer_assistant",
               block_size=dflash["block_size"], mask_token_id=dflash["mask_token_id"],
               target_layer_ids=dflash["target_layer_ids"], layer_types=["sliding_attention"] * layers,
               sliding_window=sliding_window,
               rope_parameters={"rope_type": "default", "rope_theta": target_cfg["rope_theta"]})
    cfg.update(extra)
    return cfg


def assistant_state(cfg: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Random weights under the assistant's names: `encoder.fc` / `encoder.output_norm_enc` for z-lab's
    `fc` / `hidden_norm` (the published header, tests/fixtures/families/assistant-safetensors-header.json)."""
    zlab = dict(cfg, dflash_config={"target_layer_ids": cfg["target_layer_ids"]}, architectures=["DFlashDraftModel"])
    names = {"fc.weight": "encoder.fc.weight", "hidden_norm.weight": "encoder.output_norm_enc.weight"}
    return {names.get(k, k): v for k, v in draft_state(zlab, seed).items()}


def _zlab(target_cfg: dict[str, Any], version: int = 1, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = draft_config(target_cfg, version=version, block_size=4, **extra)
    return cfg, draft_state(cfg, 5)


def _with(cfg_state: tuple[dict[str, Any], dict[str, Any]], tensors: dict[str, tuple[int, ...]],
          **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A z-lab draft with config changes (dotted keys go into dflash_config) and extra head tensors."""
    import torch

    cfg, state = cfg_state
    for key, value in changes.items():
        if key.startswith("dflash_config."):
            cfg["dflash_config"][key.split(".", 1)[1]] = value
        else:
            cfg[key] = value
    gen = torch.Generator().manual_seed(7)
    state.update({name: torch.randn(shape, generator=gen) * 0.1 for name, shape in tensors.items()})
    return cfg, state


def _speculators(target_cfg: dict[str, Any], version: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The speculators layout: the draft's Qwen3 config nested, aux ids = z-lab ids + 1 (speculators 0.9.0
    speculators/models/dflash/config.py; vLLM vllm/transformers_utils/configs/speculators/algos.py:90-149)."""
    cfg, state = _zlab(target_cfg, version)
    dflash = cfg.pop("dflash_config")
    tlc = {k: v for k, v in cfg.items() if k != "architectures"}
    out = {"architectures": ["DFlash2DraftModel" if version == 2 else "DFlashSpeculator"],
           "speculators_model_type": "dflash2" if version == 2 else "dflash", "transformer_layer_config": tlc,
           "draft_vocab_size": cfg["vocab_size"], "block_size": dflash["block_size"],
           "aux_hidden_state_layer_ids": [i + 1 for i in dflash["target_layer_ids"]],
           "mask_token_id": dflash["mask_token_id"], "sliding_window_non_causal": True,
           "speculators_config": {"algorithm": "dflash2" if version == 2 else "dflash", "proposal_methods": [
               {"proposal_type": "greedy", "speculative_tokens": dflash["block_size"] - 1}],
               "default_proposal_method": "greedy", "verifier": {"name_or_path": None, "architectures": []}}}
    if version == 2:
        out.update({k: dflash[k] for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")})
    return out, state


# format -> (target config dict -> (config.json, tensors)); head shapes from docs/families.md
FAMILY_BUILDERS: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]] = {
    "zlab-v1": lambda t: _zlab(t),
    "zlab-v2": lambda t: _zlab(t, 2),
    "muse-glimmer-assistant": lambda t: (lambda c: (c, assistant_state(c, 5)))(assistant_config(t)),
    "dflash2-beam": lambda t: _with(_zlab(t, 2), {}, architectures=["DFlash2BeamDraftModel"], is_causal=False,
                                    layer_types=["sliding_attention"] * 2,
                                    **{"dflash_config.final_logit_softcapping": 30.0}),
    "minimax-dflash2": lambda t: _with(_zlab(t, 2), {}, architectures=["MiniMaxDFlash2DraftModel"]),
    "ricursive-dflash2": lambda t: _with(_zlab(t, 2), {}, architectures=["DFlash2RicursiveDraftModel"],
                                         no_rope_layers=[0]),
    "qwen3-xpress": lambda t: _with(_zlab(t), {
        "xpress_head.w1.weight": (t["vocab_size"], 4), "xpress_head.down_h.weight": (4, t["hidden_size"]),
        "xpress_head.down_g.weight": (4, t["hidden_size"]), "xpress_head.in_proj.weight": (4, 12),
        "xpress_head.mix.L": (4, 4), "xpress_head.mlp.gate_proj.weight": (8, 4),
        "xpress_head.mlp.up_proj.weight": (8, 4), "xpress_head.mlp.down_proj.weight": (4, 8),
        "xpress_head.w2.weight": (t["vocab_size"], 4)},
        architectures=["Qwen3XPressModel"], xpress_rank=4, xpress_mlp_hidden=8),
    "lilicorr": lambda t: _with(_zlab(t), {"lilicorr.proj.weight": (8, t["hidden_size"])},
                                architectures=["LiLiCorrDraftModel"], **{"dflash_config.lilicorr_enabled": True,
                                                                          "dflash_config.lilicorr_hidden_size": 8}),
    "laguna-dflash": lambda t: _with(_zlab(t), {}, architectures=["DFlashLagunaForCausalLM"]),
    "domino": lambda t: _with(_zlab(t), {
        "prefix_gru.weight_ih_l0": (3 * 8, t["hidden_size"]), "prefix_gru.weight_hh_l0": (3 * 8, 8),
        "embed_proj.0.weight": (6, t["hidden_size"] + 8), "embed_proj.2.weight": (t["vocab_size"], 6)},
        **{"dflash_config.projector_type": "domino", "dflash_config.gru_hidden_dim": 8, "dflash_config.emb_dim": 6,
           "dflash_config.shift_label": True, "dflash_config.pure_draft_prefix_len": 1}),
    "speculators": lambda t: _speculators(t, 1),
    "speculators-dflash2": lambda t: _speculators(t, 2),
    "unknown": lambda t: _with(_zlab(t), {}, architectures=["DFlash3DraftModel"]),
}


def save_family(folder: Path, fmt: str, target_cfg: dict[str, Any]) -> Path:
    """Write a tiny random draft of family `fmt` for a target with config `target_cfg`."""
    cfg, state = FAMILY_BUILDERS[fmt](target_cfg)
    save_draft(folder, cfg, state)
    json.loads((folder / "config.json").read_text())  # written as JSON, readable back
    return folder


def muse_glimmer_target(folder: Path, vocab: int = 32, seed: int = 0, *, text_only: bool = False):
    """A tiny random Muse Glimmer target (transformers' MuseGlimmerForConditionalGeneration: normed embedding,
    NoPE / sliding layers, soft-capped and scaled logits), saved to `folder`. `text_only` leaves the vision
    tensors out: mlx-lm 0.32.2's muse_glimmer port drops only top-level `vision_*` names
    (mlx_lm/models/muse_glimmer.py, Model.sanitize), not transformers' `model.vision_*`."""
    import torch
    from safetensors.torch import save_file
    from transformers import MuseGlimmerConfig, MuseGlimmerForConditionalGeneration

    torch.manual_seed(seed)
    text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, sliding_window=8, eos_token_id=None, bos_token_id=None,
                pad_token_id=None)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, patch_size=2,
                  pos_emb_height=2, pos_emb_width=2, max_position_embeddings=4)
    cfg = MuseGlimmerConfig(text_config=text, vision_config=vision, out_hidden_size=16, projector_hidden_size=16)
    model = MuseGlimmerForConditionalGeneration(cfg).eval()
    model.save_pretrained(str(folder))
    if text_only:
        state = {k: v.contiguous() for k, v in model.state_dict().items() if ".vision_" not in k}
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return model
