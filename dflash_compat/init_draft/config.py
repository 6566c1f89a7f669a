"""A z-lab DFlash draft config.json derived from a target's (text) config (pure Python, no torch).

What is inherited and why: the draft embeds with the target's table and projects with its head, so
hidden size and vocabulary must match; its context features are the target's hidden states, so its
norms use the target's epsilon; its positions must rotate like the target's, so RoPE base and
(static) scaling are copied; Gemma-style targets scale embeddings / logits inside their own modules,
which the draft does not use, so the scaling goes into `dflash_config` (as rule DF121 expects).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from dflash_compat.exceptions import ConfigError
from dflash_compat.specs import TargetSpec, build_target_layer_ids
from dflash_compat.specs._reader import MISSING, get_dotted

__all__ = ["DraftShape", "derive_draft_config", "resolve_layer_ids", "V2_DEFAULTS"]

# DFlash 2 settings of the published z-lab v2 checkpoint (tests/fixtures/dflash2-config.json there).
V2_DEFAULTS = {"conv_kernel_size": 2, "conv_group_size": 16, "selector_rank": 256, "selector_top_k": 16}
_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "rms_norm_epsilon")
# RoPE keys that describe the target's own rotary layout, which the draft does not share:
# multimodal sections (vLLM rejects them in a draft) and partial rotation (drafts rotate fully).
_DROPPED_ROPE_KEYS = ("rope_theta", "mrope_section", "mrope_interleaved", "partial_rotary_factor")
DEFAULT_THETA = 10_000.0


@dataclass(frozen=True)
class DraftShape:
    """What the user chooses about the draft (everything else comes from the target)."""

    layers: int = 5
    block_size: int = 16
    layer_ids: Optional[Sequence[int]] = None
    mask_token_id: int = 0
    version: int = 1
    dtype: str = "bfloat16"


@dataclass
class Derived:
    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # assumptions the user should know about


def _where(t: TargetSpec) -> str:
    return f"target {t.source}: {t.config_file}"


def _need(t: TargetSpec, name: str) -> Any:
    value = getattr(t, name)
    if value is None:
        raise ConfigError(f"{_where(t)}: `{t.key(name)}` is required to derive a draft (init-draft copies it)")
    return value


def _text_value(t: TargetSpec, keys: Sequence[str]) -> Any:
    for key in keys:
        for full in ([f"{t.text_prefix}.{key}"] if t.text_prefix else []) + [key]:
            value = get_dotted(t.raw, full)
            if value is not MISSING and value is not None:
                return value
    return None


def resolve_layer_ids(t: TargetSpec, layers: int, given: Optional[Sequence[int]]) -> list[int]:
    """The draft's target layer ids: given ones checked, else the reference formula's. Ids must be
    distinct, increasing and within 0..N-2 (the last layer's output is what the head reads)."""
    n = _need(t, "num_hidden_layers")
    ids = list(given) if given else build_target_layer_ids(n, layers)
    how = "--layer-ids" if given else f"the reference formula for {n} target and {layers} draft layers"
    if not ids or any(not 0 <= i <= n - 2 for i in ids):
        raise ConfigError(f"layer ids {ids} from {how} must lie within 0..{n - 2} for a target with {n} layers; "
                          "pass --layer-ids with valid ones")
    if ids != sorted(set(ids)):
        raise ConfigError(f"layer ids {ids} from {how} must be distinct and increasing; pass --layer-ids")
    return ids


def _rope(t: TargetSpec, notes: list[str]) -> tuple[float, Optional[dict[str, Any]]]:
    theta = t.rope.theta
    if theta is None:
        theta = DEFAULT_THETA
        notes.append(f"the target gives no rope_theta; the draft uses {DEFAULT_THETA:g} (check the target's default)")
    scaling = t.rope.scaling if isinstance(t.rope.scaling, dict) else None
    if scaling is None:  # transformers 5 keeps scaling inside rope_parameters (per layer type for Gemma 3)
        params = _text_value(t, ("rope_parameters",))
        if isinstance(params, dict):
            scaling = params.get("full_attention") if isinstance(params.get("full_attention"), dict) else params
    if t.rope.mrope_section or t.rope.partial_rotary_factor not in (None, 1, 1.0):
        notes.append("the target's multimodal / partial rotary layout is not copied: the draft rotates fully")
    if not scaling or (scaling.get("rope_type") or scaling.get("type") or "default") == "default":
        return float(theta), None
    return float(theta), {k: v for k, v in scaling.items() if k not in _DROPPED_ROPE_KEYS}


def _intermediate(t: TargetSpec, hidden: int, notes: list[str]) -> int:
    size = t.intermediate_size
    if isinstance(size, list):  # per-layer widths (gemma3n): the widest
        return max(size)
    if isinstance(size, int):
        return size
    notes.append(f"the target has no dense intermediate_size (MoE?); the draft's MLP uses 3 x hidden = {3 * hidden}")
    return 3 * hidden


def _scaling(t: TargetSpec, hidden: int) -> dict[str, float]:
    """The dflash_config keys that mirror scalings the target applies inside its own modules."""
    out: dict[str, float] = {}
    if t.scales_embeddings:
        out["input_embedding_scale"] = math.sqrt(hidden)
    if t.embedding_multiplier not in (None, 1):
        out["input_embedding_scale"] = float(t.embedding_multiplier)
    if t.logits_scaling not in (None, 0, 1):
        out["output_multiplier"] = 1.0 / float(t.logits_scaling)
    if t.final_logit_softcapping is not None:
        out["final_logit_softcapping"] = float(t.final_logit_softcapping)
    return out


def derive_draft_config(t: TargetSpec, shape: DraftShape) -> Derived:
    """The draft's config.json for `t`. Raises ConfigError (one line) for a target it cannot serve."""
    notes: list[str] = []
    hidden, vocab = _need(t, "hidden_size"), _need(t, "vocab_size")
    heads = _need(t, "num_attention_heads")
    kv_heads = t.num_key_value_heads or heads
    if heads % kv_heads:
        raise ConfigError(f"{_where(t)}: {heads} attention heads are not a multiple of {kv_heads} KV heads")
    head_dim = t.head_dim
    if head_dim is None:
        if hidden % heads:
            raise ConfigError(
                f"{_where(t)}: hidden_size {hidden} is not divisible by {heads} heads and no head_dim is given")
        head_dim = hidden // heads
    ids = resolve_layer_ids(t, shape.layers, shape.layer_ids)
    theta, scaling = _rope(t, notes)
    eps = _text_value(t, _EPS_KEYS)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 < eps < 1:
        notes.append("the target gives no usable norm epsilon; the draft uses 1e-6")
        eps = 1e-6
    max_pos = t.max_position_embeddings or 32768
    dflash: dict[str, Any] = {"target_layer_ids": ids, "mask_token_id": shape.mask_token_id,
                              "block_size": shape.block_size, **_scaling(t, hidden)}
    if shape.version == 2:
        if hidden % V2_DEFAULTS["conv_group_size"]:
            raise ConfigError(f"a DFlash 2 draft groups channels by {V2_DEFAULTS['conv_group_size']}, which does not "
                              f"divide hidden_size {hidden}; use --version v1")
        dflash.update(V2_DEFAULTS, selector_top_k=min(V2_DEFAULTS["selector_top_k"], vocab))
    config: dict[str, Any] = {
        "architectures": ["DFlash2DraftModel" if shape.version == 2 else "DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": hidden,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": _intermediate(t, hidden, notes),
        "vocab_size": vocab,
        "rms_norm_eps": float(eps),
        "max_position_embeddings": max_pos,
        "hidden_act": "silu",
        "attention_bias": False,
        "rope_theta": theta,
        "rope_scaling": scaling,
        "tie_word_embeddings": False,
        "num_target_layers": t.num_hidden_layers,
        "block_size": shape.block_size,  # also in dflash_config: older and newer loaders read one or the other
        "torch_dtype": shape.dtype,
        "dflash_config": dflash,
    }
    return Derived(config, notes)
