"""Sizes no real model has: the caps above which a config is corrupt or hostile, and nothing is built from it.

Building a model from its config (on the meta device, or lazily in MLX) costs time and memory in
proportion to its layer and expert count: 10**7 layers take minutes and gigabytes before a single
rule runs. The caps sit far above every published model (as of 2026: at most ~130 decoder layers,
hidden 16-26k, vocabularies of 262k, 512 routed experts, 128 attention heads), so only an absurd
config meets them. The checker reports them as a finding (DF010) and the deep check skips the build.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["SIZE_CAPS", "MAX_LAYER_MODULES", "Oversize", "oversized"]

_LAYERS = 1024
_WIDTH = 131_072
_FFN = 1_048_576
_VOCAB = 4_194_304
_HEADS = 4096
_EXPERTS = 16_384

# config key -> the largest value a buildable model may have there (in any nested sub-config:
# text_config, vision_config, ...)
SIZE_CAPS: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers", "depth", "encoder_layers",
                     "decoder_layers", "num_decoder_layers", "num_encoder_layers"), _LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model", "head_dim", "out_hidden_size", "kv_lora_rank",
                     "q_lora_rank"), _WIDTH),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "n_inner", "moe_intermediate_size", "ffn_hidden_size",
                     "shared_expert_intermediate_size", "d_ff"), _FFN),
    **dict.fromkeys(("vocab_size", "padded_vocab_size", "draft_vocab_size"), _VOCAB),
    **dict.fromkeys(("num_attention_heads", "num_key_value_heads", "n_head", "num_heads", "n_heads"), _HEADS),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), _EXPERTS),
}
# Layers times experts: the expert blocks a build creates where experts are separate modules
# (DeepSeek-V3: 61 x 256 = 15,616; Qwen3-Next: 48 x 512 = 24,576).
MAX_LAYER_MODULES = 65_536


class Oversize(NamedTuple):
    key: str  # dotted, e.g. "vision_config.depth"
    value: int
    cap: int

    def __str__(self) -> str:
        return f"{self.key} = {self.value} (at most {self.cap})"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def oversized(raw: Any) -> list[Oversize]:
    """Every size in a raw config (any nesting, any sub-config) above its cap, and a layer x expert
    product above MAX_LAYER_MODULES; [] for every real model. Iterative, linear in the config's size."""
    found: list[Oversize] = []
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        prefix, node = stack.pop()
        if isinstance(node, list):
            stack.extend((prefix, v) for v in node if isinstance(v, (dict, list)))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, (dict, list)):
                stack.append((dotted, value))
            elif _is_int(value) and value > SIZE_CAPS.get(key, value):
                found.append(Oversize(dotted, value, SIZE_CAPS[key]))
        layers = next((node[k] for k in ("num_hidden_layers", "num_layers", "n_layer") if _is_int(node.get(k))), 0)
        experts = next((node[k] for k in ("num_experts", "num_local_experts", "n_routed_experts")
                        if _is_int(node.get(k))), 0)
        if layers > 0 and experts > 0 and layers * experts > MAX_LAYER_MODULES:
            found.append(Oversize(f"{prefix + '.' if prefix else ''}layers x experts", layers * experts,
                                  MAX_LAYER_MODULES))
    return sorted(found)
