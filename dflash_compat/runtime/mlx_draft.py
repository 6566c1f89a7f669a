"""DFlash draft models in MLX: v1 (DFlashDraftModel) and v2 (DFlash2DraftModel), loaded from z-lab checkpoints.

The modules are ours, the weights come from `*.safetensors` only (mx.load, never a pickle).
Mirrors `torch_draft.py` function for function; the maths are the same, shapes in the comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional, Union

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from dflash_compat.exceptions import ConfigError, WeightsError, one_line
from dflash_compat.runtime.checkpoints import check_state, draft_checkpoint, draft_files
from dflash_compat.runtime.draft_config import DraftConfig, DraftFacts, draft_config, put_tensor

__all__ = [
    "DraftConfig",
    "draft_config",
    "DraftCache",
    "DFlashDraftModel",
    "DFlash2DraftModel",
    "build_draft",
    "load_draft_weights",
    "load_draft",
]


# ---------------------------------------------------------------------------------------------
# config: DraftConfig / draft_config live in draft_config.py, shared with the other runtime
# ---------------------------------------------------------------------------------------------


def make_rope(cfg: DraftConfig, raw: Optional[dict[str, Any]] = None) -> nn.Module:
    """RoPE in the neox layout (halves rotate together); scaled types through mlx-lm's rope_utils."""
    if cfg.rope_type == "default":
        return nn.RoPE(cfg.head_dim, traditional=False, base=cfg.rope_theta)
    from mlx_lm.models.rope_utils import initialize_rope

    raw = raw or {}
    scaling = raw.get("rope_scaling") or raw.get("rope_parameters")
    return initialize_rope(cfg.head_dim, cfg.rope_theta, False, scaling, raw.get("max_position_embeddings"))


# ---------------------------------------------------------------------------------------------
# KV cache of the context features (the block never stays in it)
# ---------------------------------------------------------------------------------------------


class DraftCache:
    """Per draft layer, keys/values of the context features seen so far, in buffers grown in steps.

    Each call writes context + block past `length`; only the context is kept (`length` advances
    over it), the block is overwritten next time -- the reference's crop-to-start, without a copy.
    """

    step = 256

    def __init__(self, num_layers: int, capacity: int = 0) -> None:
        self.length = 0  # context positions held (== target positions 0 .. length-1)
        self.capacity = capacity
        self.keys: list[Optional[mx.array]] = [None] * num_layers  # [B, kvH, capacity, D]
        self.values: list[Optional[mx.array]] = [None] * num_layers

    def write(self, layer: int, k: mx.array, v: mx.array) -> tuple[mx.array, mx.array]:
        """Put context+block keys/values [B, kvH, C+T, D] at length .. length+C+T-1; return all keys/values so far."""
        end = self.length + k.shape[2]
        if self.keys[layer] is None or end > self.keys[layer].shape[2]:
            self._grow(layer, k, end)
        self.keys[layer][:, :, self.length:end] = k
        self.values[layer][:, :, self.length:end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def _grow(self, layer: int, like: mx.array, needed: int) -> None:
        old_k, old_v = self.keys[layer], self.values[layer]
        size = max(needed, self.capacity, 2 * old_k.shape[2] if old_k is not None else 0)
        size = -(-size // self.step) * self.step
        b, h, _, d = like.shape
        new_k, new_v = mx.zeros((b, h, size, d), like.dtype), mx.zeros((b, h, size, d), like.dtype)
        if old_k is not None:
            new_k[:, :, :self.length] = old_k[:, :, :self.length]
            new_v[:, :, :self.length] = old_v[:, :, :self.length]
        self.keys[layer], self.values[layer] = new_k, new_v


# ---------------------------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------------------------


def attention_mask(q_start: int, q_len: int, k_len: int, causal: bool, window: Optional[int],
                   inclusive: bool = False) -> Optional[mx.array]:
    """Boolean [q_len, k_len] mask (True = visible), or None for full attention.

    Key index == target position (the cache holds positions 0 .. k_len-1); the queries are the
    block at positions q_start .. q_start+q_len-1.
    """
    if not causal and window is None:
        return None
    q = mx.arange(q_start, q_start + q_len)[:, None]
    k = mx.arange(k_len)[None, :]
    visible = mx.ones((q_len, k_len), dtype=mx.bool_)
    if causal:
        visible = visible & (k <= q)
    if window is not None:
        # inclusive (the assistant's bidirectional window): |q - k| <= window; else Qwen3's q - k < window
        reach = window + 1 if inclusive else window
        visible = visible & (q - k < reach)
        if not causal:
            visible = visible & (k - q < reach)
    return visible


class DraftAttention(nn.Module):
    """Queries from the block; keys/values from the context features, then the block."""

    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        h, d, bias = cfg.hidden_size, cfg.head_dim, cfg.attention_bias
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, d
        self.scale = d ** -0.5
        self.q_proj = nn.Linear(h, cfg.num_heads * d, bias=bias)
        self.k_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=bias)
        self.v_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=bias)
        self.o_proj = nn.Linear(cfg.num_heads * d, h, bias=bias)
        self.q_norm = nn.RMSNorm(d, eps=cfg.rms_norm_eps)
        self.k_norm = nn.RMSNorm(d, eps=cfg.rms_norm_eps)

    def __call__(self, x: mx.array, ctx: mx.array, rope: Callable, start: int,
                 cache: DraftCache, layer: int, mask: Optional[mx.array]) -> mx.array:
        # x [B, T, H] block at positions start..; ctx [B, C, H] normalised context features at start-C..
        b, t, _ = x.shape
        c = ctx.shape[1]
        both = mx.concatenate([ctx, x], axis=1)  # [B, C+T, H]
        q = self.q_norm(self.q_proj(x).reshape(b, t, self.num_heads, self.head_dim)).transpose(0, 2, 1, 3)
        k = self.k_norm(self.k_proj(both).reshape(b, c + t, self.num_kv_heads, self.head_dim)).transpose(0, 2, 1, 3)
        v = self.v_proj(both).reshape(b, c + t, self.num_kv_heads, self.head_dim).transpose(0, 2, 1, 3)
        q = rope(q, offset=start)  # [B, h, T, D]
        k = rope(k, offset=start - c)  # [B, kvh, C+T, D]
        keys, values = cache.write(layer, k, v)  # [B, kvh, S+C+T, D]
        out = mx.fast.scaled_dot_product_attention(q, keys, values, scale=self.scale, mask=mask)  # [B, h, T, D]
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(b, t, -1))


class DraftMLP(nn.Module):
    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


def grouped_dynamic_conv(x: mx.array, dynamic: mx.array, base: mx.array, group_size: int) -> mx.array:
    """Causal convolution over the block: out[t] = sum_o (base[o] + dynamic[t, o]) * x[t - o].

    x [B, T, H]; dynamic [B, T, K, G] (one weight per group of `group_size` channels); base [K, H].
    """
    b, t, h = x.shape
    groups = h // group_size
    xg = x.reshape(b, t, groups, group_size)  # [B, T, G, gs]
    dyn = dynamic[..., None]  # [B, T, K, G, 1]
    out = mx.zeros_like(xg)
    for o in range(base.shape[0]):
        # x[t - o], zeros before the block
        shifted = xg if o == 0 else mx.concatenate([mx.zeros_like(xg[:, :o]), xg[:, : t - o]], axis=1)
        out = out + base[o].reshape(1, 1, groups, group_size).astype(x.dtype) * shifted
        out = out + dyn[:, :, o] * shifted
    return out.reshape(b, t, h)


class DynamicConv(nn.Module):
    """DFlash 2: one convolution before a sub-layer (prepare) and one after it (finish)."""

    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        self.kernel_size, self.group_size = cfg.conv_kernel_size, cfg.conv_group_size
        self.groups = cfg.hidden_size // cfg.conv_group_size
        self.base_kernel = mx.zeros((2, self.kernel_size, cfg.hidden_size))  # [before/after, K, H]
        self.kernel_projection = nn.Linear(cfg.hidden_size, 2 * self.kernel_size * self.groups, bias=False)

    def prepare(self, x: mx.array) -> tuple[mx.array, mx.array]:
        # the kernels for both convolutions come from the sub-layer's input
        dyn = self.kernel_projection(x).reshape(*x.shape[:-1], 2, self.kernel_size, self.groups)  # [B, T, 2, K, G]
        return grouped_dynamic_conv(x, dyn[..., 0, :, :], self.base_kernel[0], self.group_size), dyn[..., 1, :, :]

    def finish(self, x: mx.array, dyn_after: mx.array) -> mx.array:
        return grouped_dynamic_conv(x, dyn_after, self.base_kernel[1], self.group_size)


class DraftLayer(nn.Module):
    def __init__(self, cfg: DraftConfig, index: int) -> None:
        super().__init__()
        self.causal, self.window = cfg.layer_causal[index], cfg.layer_window[index]
        self.self_attn = DraftAttention(cfg)
        self.mlp = DraftMLP(cfg)
        self.input_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        if cfg.version == 2:
            self.attention_conv = DynamicConv(cfg)
            self.mlp_conv = DynamicConv(cfg)
        self.v2 = cfg.version == 2

    def __call__(self, x: mx.array, ctx: mx.array, rope: Callable, start: int,
                 cache: DraftCache, layer: int, mask: Optional[mx.array]) -> mx.array:
        h = self.input_layernorm(x)
        if self.v2:
            h, after = self.attention_conv.prepare(h)
        h = self.self_attn(h, ctx, rope, start, cache, layer, mask)
        if self.v2:
            h = self.attention_conv.finish(h, after)
        x = x + h
        h = self.post_attention_layernorm(x)
        if self.v2:
            h, after = self.mlp_conv.prepare(h)
        h = self.mlp(h)
        if self.v2:
            h = self.mlp_conv.finish(h, after)
        return x + h


class CandidateSelector(nn.Module):
    """DFlash 2: rescore the draft's top-k candidates left to right with a low-rank bigram term."""

    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        if not cfg.vocab_size:
            raise ConfigError("a DFlash 2 draft needs vocab_size for its candidate selector")
        self.top_k = cfg.selector_top_k
        self.predecessor_codebook = nn.Embedding(cfg.vocab_size, cfg.selector_rank)
        self.successor_codebook = nn.Embedding(cfg.vocab_size, cfg.selector_rank)
        self.hidden_projection = nn.Linear(cfg.hidden_size, cfg.selector_rank, bias=False)

    def select(self, hidden: mx.array, logits: mx.array, anchor: mx.array, temperature: float,
               key: Optional[mx.array] = None) -> tuple[mx.array, Optional[mx.array]]:
        """hidden [B, T, H], logits [B, T, V], anchor [B] -> tokens [B, T], and with temperature > 0
        the proposal distribution over the full vocabulary [B, T, V] (zero outside the candidates)."""
        k = min(self.top_k, logits.shape[-1])
        cands = mx.argpartition(-logits, k - 1, axis=-1)[..., :k]  # [B, T, k] (unordered)
        unary = mx.take_along_axis(logits, cands, axis=-1)  # [B, T, k]
        proj = self.hidden_projection(hidden)  # [B, T, R]
        succ = self.successor_codebook(cands)  # [B, T, k, R]
        keys = mx.random.split(key, hidden.shape[1]) if key is not None and temperature > 0 else None
        prev = anchor
        tokens, rows = [], []
        for pos in range(hidden.shape[1]):
            query = self.predecessor_codebook(prev) * proj[:, pos]  # [B, R]
            scores = unary[:, pos] + (succ[:, pos] @ query[..., None])[..., 0]  # [B, k]
            if temperature > 0:
                q = mx.softmax(scores.astype(mx.float32) / temperature, axis=-1)  # [B, k]
                index = mx.random.categorical(mx.log(q), key=None if keys is None else keys[pos])
                rows.append(mx.put_along_axis(mx.zeros(logits[:, pos].shape, q.dtype), cands[:, pos], q, axis=-1))
            else:
                index = mx.argmax(scores, axis=-1)
            prev = mx.take_along_axis(cands[:, pos], index[:, None], axis=-1)[:, 0]
            tokens.append(prev)
        return mx.stack(tokens, axis=1), mx.stack(rows, axis=1) if rows else None


class DFlashDraftModel(DraftFacts, nn.Module):
    """DFlash v1: fc + hidden_norm over the target features, Qwen3-style non-causal layers, norm."""

    def __init__(self, cfg: DraftConfig, raw_config: Optional[dict[str, Any]] = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.layers = [DraftLayer(cfg, i) for i in range(cfg.num_layers)]
        self.norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.fc = nn.Linear(len(cfg.target_layer_ids) * cfg.hidden_size, cfg.hidden_size, bias=False)
        self.hidden_norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        # computed, never loaded: kept out of the parameter tree
        object.__setattr__(self, "_rope", make_rope(cfg, raw_config))

    def new_cache(self, capacity: int = 0) -> DraftCache:
        return DraftCache(self.cfg.num_layers, capacity)

    def __call__(self, noise: mx.array, features: mx.array, start: int, cache: DraftCache) -> mx.array:
        """noise [B, T, H]: the embedded block at positions start .. start+T-1; features [B, C, L*H]:
        target features of positions start-C .. start-1 (appended to the cache). -> [B, T, H], normed."""
        t, c = noise.shape[1], features.shape[1]
        if cache.length != start - c:
            raise RuntimeError(f"draft cache holds {cache.length} positions, expected {start - c}")
        ctx = self.hidden_norm(self.fc(features))  # [B, C, H]
        masks: dict[tuple[bool, Optional[int]], Optional[mx.array]] = {}
        h = noise
        for i, layer in enumerate(self.layers):
            key = (layer.causal, layer.window)
            if key not in masks:
                masks[key] = attention_mask(start, t, start + t, layer.causal, layer.window, self.cfg.window_inclusive)
            h = layer(h, ctx, self._rope, start, cache, i, masks[key])
        cache.length = start
        return self.norm(h)

    def compute_logits(self, hidden: mx.array, head: Callable[[mx.array], mx.array]) -> mx.array:
        """Target head on the draft's hidden states [B, T, H] -> [B, T, V], with the draft's
        output multiplier and soft-cap."""
        logits = head(hidden)
        if self.cfg.output_multiplier != 1.0:
            logits = logits * self.cfg.output_multiplier
        cap = self.cfg.final_logit_softcapping
        if cap is not None:
            logits = mx.tanh(logits / cap) * cap
        return logits


class DFlash2DraftModel(DFlashDraftModel):
    """DFlash 2: v1 plus grouped dynamic causal convolutions around attention and MLP, and a
    candidate selector that proposes the block left to right."""

    def __init__(self, cfg: DraftConfig, raw_config: Optional[dict[str, Any]] = None) -> None:
        super().__init__(cfg, raw_config)
        self.candidate_selector = CandidateSelector(cfg)


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------


def build_draft(cfg: DraftConfig, raw_config: Optional[dict[str, Any]] = None) -> DFlashDraftModel:
    """A draft module with unevaluated (lazy) parameters until weights are loaded."""
    cls = DFlash2DraftModel if cfg.version == 2 else DFlashDraftModel
    return cls(cfg, raw_config)


def load_draft_weights(folder: Union[str, Path], files: Optional[list[Path]] = None) -> dict[str, mx.array]:
    """Every tensor of the draft's checked *.safetensors files (never pickles), names normalised."""
    state: dict[str, mx.array] = {}
    for path in files if files is not None else draft_files(folder):
        try:
            tensors = mx.load(str(path), format="safetensors")
        except (RuntimeError, OSError, ValueError) as exc:
            raise WeightsError(f"{path}: cannot read safetensors ({one_line(exc)})") from None
        for name, tensor in tensors.items():
            put_tensor(state, name, tensor, path)
    return state


def _quantize_like(model: nn.Module, state: dict[str, mx.array], raw: dict[str, Any]) -> None:
    """An mlx-quantised draft (`quantization` in its config): quantise the modules it stores packed."""
    quant = raw.get("quantization")
    if not isinstance(quant, dict) or "bits" not in quant:
        return
    nn.quantize(model, group_size=quant.get("group_size", 64), bits=quant["bits"], mode=quant.get("mode", "affine"),
                class_predicate=lambda p, m: hasattr(m, "to_quantized") and f"{p}.scales" in state)


def load_draft(
    ref: Union[str, Path],
    *,
    dtype: Optional[mx.Dtype] = mx.float32,
    token: Optional[str] = None,
) -> DFlashDraftModel:
    """Load a z-lab draft (a local folder or a Hub repo id) into our modules, in eval mode.
    `dtype` casts the floating-point weights (None keeps the checkpoint's dtype)."""
    ckpt = draft_checkpoint(ref, token=token)
    model = build_draft(ckpt.cfg, ckpt.raw)
    state = load_draft_weights(ref, ckpt.files)
    _quantize_like(model, state, ckpt.raw)
    check_state({k: tuple(v.shape) for k, v in tree_flatten(model.parameters())},
                {k: tuple(v.shape) for k, v in state.items()}, f"draft {ref}")
    if dtype is not None:
        # packed quantised weights are integers; only floating tensors (and their scales) are cast
        state = {k: v.astype(dtype) if mx.issubdtype(v.dtype, mx.floating) else v for k, v in state.items()}
    model.load_weights(list(state.items()), strict=True)
    mx.eval(model.parameters())
    model.eval()
    return model
