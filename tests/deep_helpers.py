"""Helpers for the deep-check tests: tiny target configs, draft safetensors headers, probing with a cache."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from functools import cache
from pathlib import Path
from typing import Any, Optional, Union

from dflash_compat.checker import BACKENDS, RuleContext, run_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.modelfacts import DraftWeights, ModuleFacts, Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.rules import RULES_BY_CODE
from dflash_compat.specs import DraftSpec, TargetSpec, parse_draft_config, parse_target_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"

_T = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}
# Tiny configs of each layout the issue names, as published model types (values shrunk, keys real).
TINY: dict[str, dict[str, Any]] = {
    "llama": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4, **_T},
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 4, "head_dim": 16, **_T},
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64, "n_layer": 4, "n_head": 4,
             "vocab_size": 1000, "tie_word_embeddings": True},
    "gpt_neox": {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "num_hidden_layers": 4,
                 "tie_word_embeddings": False, **{k: v for k, v in _T.items() if k != "num_key_value_heads"}},
    "opt": {"architectures": ["OPTForCausalLM"], "model_type": "opt", "num_hidden_layers": 4, "ffn_dim": 128,
            "word_embed_proj_dim": 64, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 1000},
    "falcon": {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "num_hidden_layers": 4,
               "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 1000},
    "qwen3_vl": {
        "architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
        "text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 4, "head_dim": 16,
                        "rope_scaling": {"rope_type": "default", "mrope_section": [2, 3, 3]}, **_T},
        "vision_config": {"depth": 4, "hidden_size": 32, "num_heads": 2, "intermediate_size": 64,
                          "out_hidden_size": 64, "deepstack_visual_indexes": [1]},
    },
    "qwen3_next": {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "num_hidden_layers": 4,
                   "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
                   "linear_value_head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                   "shared_expert_intermediate_size": 32, **_T},
    "mistral": {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_hidden_layers": 4,
                "head_dim": 16, "sliding_window": 32, **_T},
    "gemma3": {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "num_hidden_layers": 4,
               "head_dim": 16, "sliding_window": 32, "final_logit_softcapping": 30.0, **_T},
    "mamba": {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "num_hidden_layers": 4,
              "hidden_size": 64, "vocab_size": 1000},
    "lfm2": {"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "num_hidden_layers": 4,
             "layer_types": ["conv", "full_attention", "conv", "full_attention"], **_T},
}


def tiny_draft(target_cfg: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A DFlash v1 draft config matching a tiny target (2 layers, ids [1, 2])."""
    text = target_cfg.get("text_config") or target_cfg
    hidden = text.get("hidden_size") or text.get("n_embd")
    cfg = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": hidden, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
        "vocab_size": text.get("vocab_size", 1000), "rms_norm_eps": 1e-6, "max_position_embeddings": 4096,
        "hidden_act": "silu", "block_size": 8, "num_target_layers": 4, "torch_dtype": "bfloat16",
        "dflash_config": {"mask_token_id": 999, "target_layer_ids": [1, 2]},
    }
    out = copy.deepcopy(cfg)
    for k, v in changes.items():
        node = out
        *path, last = k.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = v
    return out


def draft_tensors(cfg: dict[str, Any], dtype: str = "BF16") -> dict[str, tuple[str, list[int]]]:
    """The z-lab v1 tensor layout for a draft config, written out independently of the rules' own table."""
    h, n = cfg["hidden_size"], cfg["num_hidden_layers"]
    hd, nh, kv, inter = cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    ids = cfg["dflash_config"]["target_layer_ids"]
    t = {"fc.weight": [h, len(ids) * h], "hidden_norm.weight": [h], "norm.weight": [h]}
    for i in range(n):
        p = f"layers.{i}."
        t.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [nh * hd, h], p + "self_attn.k_proj.weight": [kv * hd, h],
            p + "self_attn.v_proj.weight": [kv * hd, h], p + "self_attn.o_proj.weight": [h, nh * hd],
            p + "self_attn.q_norm.weight": [hd], p + "self_attn.k_norm.weight": [hd],
            p + "mlp.gate_proj.weight": [inter, h], p + "mlp.up_proj.weight": [inter, h],
            p + "mlp.down_proj.weight": [h, inter],
        })
    return {k: (dtype, v) for k, v in t.items()}


_SIZE = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], data: str = "garbage",
                      metadata: Optional[dict[str, str]] = None) -> int:
    """Write a safetensors file: a real header, then a data section that is random bytes ("garbage"), half
    missing ("short") or a sparse hole ("sparse"). Returns the header length N."""
    header: dict[str, Any] = {"__metadata__": metadata or {"format": "pt"}}
    off = 0
    for name, (dtype, shape) in tensors.items():
        n = _SIZE[dtype]
        for s in shape:
            n *= s
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(len(blob).to_bytes(8, "little") + blob)
        if data == "garbage":
            fh.write(os.urandom(off))
        elif data == "short":
            fh.write(os.urandom(off // 2))
        elif data == "sparse":
            fh.truncate(8 + len(blob) + off)
    return len(blob)


def write_draft(folder: Path, cfg: dict[str, Any], tensors: Optional[dict] = None, data: str = "garbage") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    write_safetensors(folder / "model.safetensors", draft_tensors(cfg) if tensors is None else tensors, data=data)
    return folder


def read_draft(folder: Path) -> tuple[DraftSpec, Union[DraftWeights, Skipped]]:
    """The draft spec and its weight facts from the local headers, as the deep check reads them."""
    from dflash_compat.inspection import inspect_draft

    d = parse_draft_config(json.loads((folder / "config.json").read_text()), str(folder))
    return d, inspect_draft(Resolved(ref=str(folder), folder=folder))


@cache
def _probe(cfg_json: str, trust: bool) -> Union[ModuleFacts, Skipped]:
    from dflash_compat.inspection.torch_meta import inspect_torch_target

    t = parse_target_config(json.loads(cfg_json), "target")
    return inspect_torch_target(Resolved(ref="target", folder=Path("/nonexistent")), t,
                                CheckOptions(trust_remote_code=trust))


def probe(cfg: dict[str, Any], trust: bool = False) -> Union[ModuleFacts, Skipped]:
    """The target's module facts, built on the meta device (cached per config: tests share builds; the
    facts are frozen, so sharing them is safe)."""
    return _probe(json.dumps(cfg, sort_keys=True), trust)


def tweak(facts: Any, **changes: Any) -> Any:
    """A copy of frozen facts with nested fields changed: tweak(m, paths__layers_len=3, model_class="X")."""
    nested: dict[str, dict[str, Any]] = {}
    flat: dict[str, Any] = {}
    for key, value in changes.items():
        head, sep, rest = key.partition("__")
        if sep:
            nested.setdefault(head, {})[rest] = value
        else:
            flat[head] = value
    for head, sub in nested.items():
        flat[head] = tweak(getattr(facts, head), **sub)
    return dataclasses.replace(facts, **flat)


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name / "config.json").read_text())


def findings(code: str, target: TargetSpec, draft: DraftSpec, weights=None, modules=None, backends=BACKENDS):
    ctx = RuleContext(target=target, draft=draft, options=CheckOptions(), modules=modules, weights=weights)
    return run_rules(ctx, [RULES_BY_CODE[code]], backends)


def catches(code: str, target: TargetSpec, draft: DraftSpec, weights=None, *, backend: Optional[str] = None,
            modules=None) -> bool:
    return any(f.code == code and (backend is None or f.backend in (backend, "common"))
               for f in findings(code, target, draft, weights=weights, modules=modules))
