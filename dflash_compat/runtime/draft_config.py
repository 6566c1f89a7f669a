"""The draft's resolved settings, shared by the PyTorch and MLX runtimes (pure Python, no framework).

`draft_config(spec)` turns a DraftSpec into the DraftConfig both `torch_draft.py` and `mlx_draft.py`
build their modules from, so the two runtimes read a checkpoint the same way by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..contract import DRAFT_LAYER_TYPES
from ..exceptions import ConfigError, RuntimeUnsupportedError
from ..specs import DraftSpec
from ..specs.families import DFLASH_PACKAGE_FORMATS

__all__ = [
    "DraftConfig",
    "draft_config",
    "normalise_key",
    "DraftFacts",
    "STATIC_ROPE_TYPES",
]

# RoPE types whose frequencies do not depend on the sequence length (dynamic / longrope do).
STATIC_ROPE_TYPES = ("linear", "yarn", "llama3", "proportional")


@dataclass(frozen=True)
class DraftConfig:
    """Everything the draft's modules and the runtime read, resolved from a DraftSpec."""

    version: int  # 1: DFlashDraftModel, 2: DFlash2DraftModel
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: Optional[int]
    rms_norm_eps: float
    attention_bias: bool
    target_layer_ids: tuple[int, ...]
    block_size: int
    mask_token_id: int
    layer_causal: tuple[bool, ...]  # per draft layer
    layer_window: tuple[Optional[int], ...]  # per draft layer: sliding window, or None
    input_embedding_scale: float = 1.0
    output_multiplier: float = 1.0
    final_logit_softcapping: Optional[float] = None
    rope_theta: float = 10000.0
    rope_type: str = "default"
    conv_kernel_size: int = 0
    conv_group_size: int = 0
    selector_rank: int = 0
    selector_top_k: int = 0


def draft_config(spec: DraftSpec) -> DraftConfig:
    """Resolve a DraftSpec into a DraftConfig, with the reference runtime's defaults."""
    where = f"draft {spec.source}: {spec.config_file}"
    if spec.is_speculators:
        raise RuntimeUnsupportedError(
            f"{where}: speculators-format drafts are not supported by the reference runtime; convert it with "
            "`dflash-check convert DRAFT --to zlab -o OUT` and run that"
        )
    if spec.format not in DFLASH_PACKAGE_FORMATS:
        raise RuntimeUnsupportedError(
            f"{where}: the reference runtime runs z-lab DFlash v1 and v2 drafts only, not {spec.family} drafts"
        )
    if spec.hidden_act not in (None, "silu"):
        raise RuntimeUnsupportedError(f"{where}: hidden_act {spec.hidden_act!r} is not supported (silu only)")
    if spec.num_attention_heads is None:
        raise ConfigError(f"{where}: `num_attention_heads` is required")
    if spec.intermediate_size is None:
        raise ConfigError(f"{where}: `intermediate_size` is required")
    if spec.mask_token_id is None:
        raise ConfigError(f"{where}: `dflash_config.mask_token_id` is required")
    ids = spec.target_layer_ids
    if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise ConfigError(f"{where}: `dflash_config.target_layer_ids` must be a non-empty list of layer indices")
    n = spec.num_hidden_layers
    layer_types = list(spec.layer_types or ["full_attention"] * n)
    if len(layer_types) != n or any(t not in DRAFT_LAYER_TYPES for t in layer_types):
        raise ConfigError(f"{where}: `layer_types` must list full_attention / sliding_attention for each of {n} layers")
    # As transformers' Qwen3Config (and so the dflash package) does: the window takes effect only
    # with use_sliding_window; a sliding layer without it is causal with no window.
    window = spec.sliding_window if spec.raw.get("use_sliding_window") else None
    causal = tuple(t == "sliding_attention" if spec.is_causal is None else bool(spec.is_causal) for t in layer_types)
    windows = tuple(window if t == "sliding_attention" else None for t in layer_types)
    rope = spec.rope
    if rope.mrope_section:
        raise RuntimeUnsupportedError(f"{where}: mrope_section in the draft's RoPE is not supported")
    if rope.partial_rotary_factor not in (None, 1, 1.0):
        raise RuntimeUnsupportedError(f"{where}: partial_rotary_factor {rope.partial_rotary_factor} is not supported")
    rope_type = rope.rope_type or "default"
    if rope_type not in ("default", *STATIC_ROPE_TYPES):
        raise RuntimeUnsupportedError(f"{where}: RoPE type {rope_type!r} is not supported")
    version = 2 if spec.format == "zlab-v2" else 1
    if version == 2:
        missing = [k for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
                   if getattr(spec, k) is None]
        if missing:
            raise ConfigError(f"{where}: a DFlash 2 draft needs dflash_config.{', dflash_config.'.join(missing)}")
        if spec.hidden_size % spec.conv_group_size:
            raise ConfigError(f"{where}: conv_group_size {spec.conv_group_size} does not divide hidden_size")
    block = spec.block_size if spec.block_size is not None else 16
    if block < 1:
        raise ConfigError(f"{where}: block_size must be >= 1 (got {block})")
    heads = spec.num_attention_heads
    softcap = spec.final_logit_softcapping
    return DraftConfig(
        version=version,
        hidden_size=spec.hidden_size,
        num_layers=n,
        num_heads=heads,
        num_kv_heads=spec.num_key_value_heads or heads,
        head_dim=spec.head_dim or spec.hidden_size // heads,
        intermediate_size=spec.intermediate_size,
        vocab_size=spec.vocab_size,
        rms_norm_eps=float(spec.rms_norm_eps if spec.rms_norm_eps is not None else 1e-6),
        attention_bias=bool(spec.attention_bias),
        target_layer_ids=tuple(ids),
        block_size=block,
        mask_token_id=spec.mask_token_id,
        layer_causal=causal,
        layer_window=windows,
        input_embedding_scale=float(spec.input_embedding_scale if spec.input_embedding_scale is not None else 1.0),
        output_multiplier=float(spec.output_multiplier if spec.output_multiplier is not None else 1.0),
        final_logit_softcapping=float(softcap) if softcap is not None and softcap > 0 else None,
        rope_theta=float(rope.theta if rope.theta is not None else 10000.0),
        rope_type=rope_type,
        conv_kernel_size=spec.conv_kernel_size or 0,
        conv_group_size=spec.conv_group_size or 0,
        selector_rank=spec.selector_rank or 0,
        selector_top_k=spec.selector_top_k or 0,
    )


def normalise_key(name: str) -> str:
    """A draft checkpoint's tensor name as our modules (both runtimes) name it."""
    # some exports prefix every name with "model."; z-lab names never start with it
    name = name[len("model."):] if name.startswith("model.") else name
    # z-lab v2 checkpoints store the codebooks as bare tensors
    if name in ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook"):
        return name + ".weight"
    return name


class DraftFacts:
    """What the runtime reads from a draft model of either framework (a base of both runtimes'
    DFlashDraftModel; `cfg` is the model's DraftConfig)."""

    cfg: DraftConfig

    @property
    def block_size(self) -> int:
        return self.cfg.block_size

    @property
    def mask_token_id(self) -> int:
        return self.cfg.mask_token_id

    @property
    def target_layer_ids(self) -> tuple[int, ...]:
        return self.cfg.target_layer_ids
