"""DFlash draft models in plain PyTorch: v1 (DFlashDraftModel) and v2 (DFlash2DraftModel), loaded from z-lab
checkpoints.

No transformers modelling code and no remote code: the modules are ours, the weights come from
`*.safetensors` only. Mirrored function for function by `mlx_draft.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

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

_TORCH = tuple(int(p) for p in torch.__version__.split(".")[:2])
_SDPA_GQA = _TORCH >= (2, 5)
_FUSED_RMS_NORM = hasattr(F, "rms_norm")


# ---------------------------------------------------------------------------------------------
# config: DraftConfig / draft_config live in draft_config.py, shared with the other runtime
# ---------------------------------------------------------------------------------------------


def rope_inv_freq(cfg: DraftConfig, raw: Optional[dict[str, Any]] = None) -> tuple[torch.Tensor, float]:
    """Inverse frequencies [head_dim/2] and the cos/sin scale; scaled RoPE types via transformers."""
    if cfg.rope_type == "default":
        exponents = torch.arange(0, cfg.head_dim, 2, dtype=torch.float32, device="cpu") / cfg.head_dim
        return 1.0 / (cfg.rope_theta ** exponents), 1.0
    from transformers import Qwen3Config
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    with torch.device("cpu"):  # real numbers even while the modules are built on the meta device
        inv_freq, scale = ROPE_INIT_FUNCTIONS[cfg.rope_type](Qwen3Config(**(raw or {})), device="cpu")
    return inv_freq.float(), float(scale)


# ---------------------------------------------------------------------------------------------
# KV cache of the context features (the block never stays in it)
# ---------------------------------------------------------------------------------------------


class DraftCache:
    """Per draft layer, keys/values of the context features seen so far, in preallocated buffers.

    The reference runtime appends context + block to a DynamicCache and crops the block off after
    every call; here the block is written past `length` and simply overwritten next time.
    """

    def __init__(self, num_layers: int, capacity: int = 0, static: bool = False) -> None:
        self.length = 0  # context positions held (== target positions 0 .. length-1)
        self.capacity = capacity
        # static: the buffers never grow and every forward attends over all `capacity` positions, the
        # ones past the block masked (one shape for every step); zero-filled, so a masked position
        # never holds a NaN that 0 * NaN would let through
        self.static = static
        self.keys: list[Optional[torch.Tensor]] = [None] * num_layers  # [B, kvH, capacity, D]
        self.values: list[Optional[torch.Tensor]] = [None] * num_layers

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Put context+block keys/values [B, kvH, C+T, D] at length .. length+C+T-1; return all keys/values so far
        (static: the whole buffer)."""
        end = self.length + k.shape[2]
        if self.keys[layer] is None or end > self.keys[layer].shape[2]:
            if self.static and self.keys[layer] is not None:
                raise RuntimeError(f"static draft cache of {self.capacity} positions cannot hold {end}")
            self._grow(layer, k, end)
        buf_k, buf_v = self.keys[layer], self.values[layer]
        buf_k[:, :, self.length:end] = k
        buf_v[:, :, self.length:end] = v
        if self.static:
            return buf_k, buf_v
        return buf_k[:, :, :end], buf_v[:, :, :end]

    def _grow(self, layer: int, like: torch.Tensor, needed: int) -> None:
        old_k, old_v = self.keys[layer], self.values[layer]
        size = max(needed, self.capacity, 2 * old_k.shape[2] if old_k is not None else 0)
        b, h, _, d = like.shape
        alloc = like.new_zeros if self.static else like.new_empty
        self.keys[layer], self.values[layer] = alloc(b, h, size, d), alloc(b, h, size, d)

        if old_k is not None:
            self.keys[layer][:, :, :self.length] = old_k[:, :, :self.length]
            self.values[layer][:, :, :self.length] = old_v[:, :, :self.length]


class _FixedWriter:
    """A static cache written at device-tensor positions (the CUDA-graph draft step): the padded context
    at ctx_pos, then the block at blk_pos (the block overwrites the padding where the two meet); the
    padding past the block lands on positions the mask hides and the next step overwrites."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], ctx_pos: torch.Tensor,
                 blk_pos: torch.Tensor) -> None:
        self.keys, self.values, self.ctx_pos, self.blk_pos = keys, values, ctx_pos, blk_pos

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p = self.ctx_pos.shape[0]
        for buf, new in ((self.keys[layer], k), (self.values[layer], v)):
            buf.index_copy_(2, self.ctx_pos, new[:, :, :p])
            buf.index_copy_(2, self.blk_pos, new[:, :, p:])
        return self.keys[layer], self.values[layer]


def _tensor_mask(blk_pos: torch.Tensor, k_len: int, valid: torch.Tensor, causal: bool, window: Optional[int],
                 inclusive: bool) -> torch.Tensor:
    """attention_mask(..., valid=...) from device tensors: block positions [T], the valid length (0-d)."""
    q = blk_pos[:, None]
    k = torch.arange(k_len, device=blk_pos.device)[None, :]
    visible = k < valid
    if causal:
        visible = visible & (k <= q)
    if window is not None:
        reach = window + 1 if inclusive else window
        visible = visible & (q - k < reach)
        if not causal:
            visible = visible & (k - q < reach)
    return visible


class _NoCache:
    """Training (`forward_masked`): the keys/values of one forward, nothing kept or copied."""

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return k, v


# ---------------------------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # statistics in float32, as the Qwen3 target computes them
        normed = F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps) if _FUSED_RMS_NORM else \
            x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x [B, heads, T, D]; cos/sin [T, D] (neox layout: the two halves rotate together)
    return x * cos + rotate_half(x) * sin


def attention_mask(q_start: int, q_len: int, k_len: int, causal: bool, window: Optional[int],
                   device: torch.device, inclusive: bool = False,
                   valid: Optional[int] = None) -> Optional[torch.Tensor]:
    """Boolean [q_len, k_len] mask (True = visible), or None for full attention.

    Key index == target position (the cache holds positions 0 .. k_len-1); the queries are the
    block at positions q_start .. q_start+q_len-1. `valid`: only keys below it hold this run's
    positions (a static cache's buffer is longer; the rest is masked).
    """
    if not causal and window is None and valid is None:
        return None
    q = torch.arange(q_start, q_start + q_len, device=device)[:, None]
    k = torch.arange(k_len, device=device)[None, :]
    visible = torch.ones(q_len, k_len, dtype=torch.bool, device=device)
    if valid is not None:
        visible &= k < valid
    if causal:
        visible &= k <= q
    if window is not None:
        # inclusive (the assistant's bidirectional window): |q - k| <= window; else Qwen3's q - k < window
        reach = window + 1 if inclusive else window
        visible &= q - k < reach
        if not causal:
            visible &= k - q < reach
    return visible


class DraftAttention(nn.Module):
    """Queries from the block; keys/values from the context features, then the block."""

    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        h, d, bias = cfg.hidden_size, cfg.head_dim, cfg.attention_bias
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, d
        self.q_proj = nn.Linear(h, cfg.num_heads * d, bias=bias)
        self.k_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=bias)
        self.v_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=bias)
        self.o_proj = nn.Linear(cfg.num_heads * d, h, bias=bias)
        self.q_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(d, cfg.rms_norm_eps)

    def forward(self, x: torch.Tensor, ctx: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: DraftCache, layer: int, mask: Optional[torch.Tensor]) -> torch.Tensor:
        # x [B, T, H] block; ctx [B, C, H] normalised context features; cos/sin [C+T, D]
        b, t, _ = x.shape
        c = ctx.shape[1]
        q = self.q_norm(self.q_proj(x).view(b, t, self.num_heads, self.head_dim)).transpose(1, 2)  # [B, h, T, D]
        kv_in = torch.cat([ctx, x], dim=1)  # [B, C+T, H]: keys/values see the context, then the block
        k = self.k_proj(kv_in).view(b, c + t, self.num_kv_heads, self.head_dim)
        v = self.v_proj(kv_in).view(b, c + t, self.num_kv_heads, self.head_dim)
        k = self.k_norm(k).transpose(1, 2)  # [B, kvh, C+T, D]
        v = v.transpose(1, 2)
        q = apply_rope(q, cos[c:], sin[c:])
        k = apply_rope(k, cos, sin)
        keys, values = cache.write(layer, k, v)  # [B, kvh, S+C+T, D]
        out = _sdpa(q, keys, values, mask, self.num_heads // self.num_kv_heads)  # [B, h, T, D]
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], groups: int) -> torch.Tensor:
    # enable_gqa rules out the memory-efficient CUDA kernel; with a mask (which rules out flash) the
    # heads are repeated instead, so CUDA keeps a fused kernel (the same numbers: one key per head)
    if groups > 1 and (not _SDPA_GQA or (mask is not None and q.device.type == "cuda")):
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        groups = 1
    extra = {"enable_gqa": True} if groups > 1 else {}
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **extra)


class DraftMLP(nn.Module):
    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def grouped_dynamic_conv(x: torch.Tensor, dynamic: torch.Tensor, base: torch.Tensor, group_size: int) -> torch.Tensor:
    """Causal convolution over the block: out[t] = sum_o (base[o] + dynamic[t, o]) * x[t - o].

    x [B, T, H]; dynamic [B, T, K, G] (one weight per group of `group_size` channels); base [K, H].
    """
    b, t, h = x.shape
    groups = h // group_size
    xg = x.view(b, t, groups, group_size)  # [B, T, G, gs]
    dyn = dynamic.unsqueeze(-1)  # [B, T, K, G, 1]
    out = torch.zeros_like(xg)
    for o in range(base.shape[0]):
        shifted = xg if o == 0 else F.pad(xg[:, :-o], (0, 0, 0, 0, o, 0))  # x[t - o], zeros before the block
        out = out + base[o].view(1, 1, groups, group_size).to(x.dtype) * shifted
        out = torch.addcmul(out, dyn[:, :, o], shifted)
    return out.view(b, t, h)


class DynamicConv(nn.Module):
    """DFlash 2: one convolution before a sub-layer (prepare) and one after it (finish)."""

    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        self.kernel_size, self.group_size = cfg.conv_kernel_size, cfg.conv_group_size
        self.groups = cfg.hidden_size // cfg.conv_group_size
        self.base_kernel = nn.Parameter(torch.zeros(2, self.kernel_size, cfg.hidden_size))  # [before/after, K, H]
        self.kernel_projection = nn.Linear(cfg.hidden_size, 2 * self.kernel_size * self.groups, bias=False)

    def prepare(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # the kernels for both convolutions come from the sub-layer's input
        dyn = self.kernel_projection(x).view(*x.shape[:-1], 2, self.kernel_size, self.groups)  # [B, T, 2, K, G]
        return grouped_dynamic_conv(x, dyn[..., 0, :, :], self.base_kernel[0], self.group_size), dyn[..., 1, :, :]

    def finish(self, x: torch.Tensor, dyn_after: torch.Tensor) -> torch.Tensor:
        return grouped_dynamic_conv(x, dyn_after, self.base_kernel[1], self.group_size)


class DraftLayer(nn.Module):
    def __init__(self, cfg: DraftConfig, index: int) -> None:
        super().__init__()
        self.causal, self.window = cfg.layer_causal[index], cfg.layer_window[index]
        self.self_attn = DraftAttention(cfg)
        self.mlp = DraftMLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attention_conv: Optional[DynamicConv] = DynamicConv(cfg) if cfg.version == 2 else None
        self.mlp_conv: Optional[DynamicConv] = DynamicConv(cfg) if cfg.version == 2 else None

    def forward(self, x: torch.Tensor, ctx: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: DraftCache, layer: int, mask: Optional[torch.Tensor]) -> torch.Tensor:
        h = self.input_layernorm(x)
        if self.attention_conv is not None:
            h, after = self.attention_conv.prepare(h)
        h = self.self_attn(h, ctx, cos, sin, cache, layer, mask)
        if self.attention_conv is not None:
            h = self.attention_conv.finish(h, after)
        x = x + h
        h = self.post_attention_layernorm(x)
        if self.mlp_conv is not None:
            h, after = self.mlp_conv.prepare(h)
        h = self.mlp(h)
        if self.mlp_conv is not None:
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

    def select(self, hidden: torch.Tensor, logits: torch.Tensor, anchor: torch.Tensor, temperature: float,
               generator: Optional[torch.Generator] = None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """hidden [B, T, H], logits [B, T, V], anchor [B] -> tokens [B, T], and with temperature > 0
        the proposal distribution over the full vocabulary [B, T, V] (zero outside the candidates)."""
        k = min(self.top_k, logits.shape[-1])
        unary, cands = torch.topk(logits, k, dim=-1, sorted=False)  # [B, T, k]
        proj = self.hidden_projection(hidden)  # [B, T, R]
        succ = self.successor_codebook(cands)  # [B, T, k, R]
        prev = anchor
        tokens, rows = [], []
        for pos in range(hidden.shape[1]):
            query = self.predecessor_codebook(prev) * proj[:, pos]  # [B, R]
            scores = unary[:, pos] + torch.einsum("br,bkr->bk", query, succ[:, pos])  # [B, k]
            if temperature > 0:
                q = torch.softmax(scores.float() / temperature, dim=-1)  # [B, k]
                index = torch.multinomial(q, 1, generator=generator)[:, 0]
                rows.append(torch.zeros_like(logits[:, pos], dtype=q.dtype).scatter(-1, cands[:, pos], q))
            else:
                index = scores.argmax(dim=-1)
            prev = cands[:, pos].gather(-1, index[:, None])[:, 0]
            tokens.append(prev)
        return torch.stack(tokens, dim=1), torch.stack(rows, dim=1) if rows else None


class DFlashDraftModel(DraftFacts, nn.Module):
    """DFlash v1: fc + hidden_norm over the target features, Qwen3-style non-causal layers, norm."""

    def __init__(self, cfg: DraftConfig, raw_config: Optional[dict[str, Any]] = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.layers = nn.ModuleList(DraftLayer(cfg, i) for i in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.fc = nn.Linear(len(cfg.target_layer_ids) * cfg.hidden_size, cfg.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        inv_freq, self._rope_scale = rope_inv_freq(cfg, raw_config)
        self._inv_freq = inv_freq.to("cpu")  # kept off the state dict: computed, never loaded
        self._rope: Optional[tuple[torch.Tensor, torch.Tensor]] = None  # cos/sin tables [P, D]
        self._graph_core: Any = None  # use_graphs: the compiled fixed-shape step
        self._graph_block = 0

    def new_cache(self, capacity: int = 0, static: bool = False) -> DraftCache:
        return DraftCache(self.cfg.num_layers, capacity, static)

    def rope(self, begin: int, end: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin [end-begin, D] for positions begin .. end-1, from a table grown on demand."""
        if self._rope is None or self._rope[0].shape[0] < end or self._rope[0].dtype != like.dtype \
                or self._rope[0].device != like.device:
            size = max(end, 2 * (self._rope[0].shape[0] if self._rope is not None else 0), 256)
            pos = torch.arange(size, dtype=torch.float32, device=like.device)
            freqs = pos[:, None] * self._inv_freq.to(like.device)[None, :]  # [P, D/2]
            emb = torch.cat((freqs, freqs), dim=-1)  # [P, D]
            self._rope = ((emb.cos() * self._rope_scale).to(like.dtype), (emb.sin() * self._rope_scale).to(like.dtype))
        return self._rope[0][begin:end], self._rope[1][begin:end]

    def use_graphs(self, block_size: int, positions: int, like: torch.Tensor, compile_fn: Any = None) -> None:
        """Run every draft step of `block_size` (with a static cache) as one fixed-shape step through
        torch.compile(mode="reduce-overhead") (CUDA graphs): the context padded to block_size positions,
        positions, RoPE rows, cache writes and masks all from device tensors, so nothing in the step
        depends on a Python integer that changes. block_size 0: back to the eager forward. The RoPE
        table is grown once, to `positions` + block_size, so the step always reads the same tensors."""
        self._graph_block = block_size
        if block_size and self._graph_core is None:
            compile_fn = compile_fn or (lambda f: torch.compile(f, mode="reduce-overhead", dynamic=False))
            self._graph_core = compile_fn(self._fixed_step)
        if block_size:
            self.rope(0, positions + block_size, like)

    def _fixed_step(self, noise: torch.Tensor, features: torch.Tensor, ctx_pos: torch.Tensor, blk_pos: torch.Tensor,
                    valid: torch.Tensor, cos_table: torch.Tensor, sin_table: torch.Tensor,
                    keys: list[torch.Tensor], values: list[torch.Tensor]) -> torch.Tensor:
        """The draft step on fixed shapes: noise [B, T, H], features [B, P, L*H] (padded context), ctx_pos [P],
        blk_pos [T], valid (0-d: positions below it are real), the full RoPE tables, the static buffers."""
        ctx = self.hidden_norm(self.fc(features))  # [B, P, H]
        pos = torch.cat([ctx_pos, blk_pos])
        cos, sin = cos_table[pos], sin_table[pos]  # [P+T, D]
        writer = _FixedWriter(keys, values, ctx_pos, blk_pos)
        k_len = keys[0].shape[2]
        masks: dict[tuple[bool, Optional[int]], torch.Tensor] = {}
        h = noise
        for i, layer in enumerate(self.layers):
            key = (layer.causal, layer.window)
            if key not in masks:
                masks[key] = _tensor_mask(blk_pos, k_len, valid, layer.causal, layer.window, self.cfg.window_inclusive)
            h = layer(h, ctx, cos, sin, writer, i, masks[key])
        return self.norm(h)

    def _forward_fixed(self, noise: torch.Tensor, features: torch.Tensor, start: int,
                       cache: DraftCache) -> torch.Tensor:
        t, c = noise.shape[1], features.shape[1]
        device = noise.device
        first = cache.keys[0] is None
        if first:  # allocate the static buffers (zeros) at their final size
            for layer in range(len(self.layers)):
                kv = self.layers[layer].self_attn
                like = noise.new_zeros(noise.shape[0], kv.num_kv_heads, 1, kv.head_dim)
                cache._grow(layer, like, cache.capacity)
        if not getattr(cache, "_marked", False):  # fixed addresses: the CUDA graph writes them in place
            for buf in cache.keys + cache.values:
                torch._dynamo.mark_static_address(buf)
            cache._marked = True
        p = self._graph_block
        padded = F.pad(features, (0, 0, 0, p - c))  # [B, P, L*H]
        ctx_pos = torch.arange(start - c, start - c + p, device=device)
        blk_pos = torch.arange(start, start + t, device=device)
        valid = torch.tensor(start + t, device=device)
        cos_table, sin_table = self._rope if self._rope is not None else self.rope(0, start + t, noise)
        if hasattr(torch.compiler, "cudagraph_mark_step_begin"):
            torch.compiler.cudagraph_mark_step_begin()
        out = self._graph_core(noise, padded, ctx_pos, blk_pos, valid, cos_table, sin_table, cache.keys, cache.values)
        cache.length = start
        return out.clone()  # a CUDA graph's output is overwritten by its next replay

    def forward(self, noise: torch.Tensor, features: torch.Tensor, start: int, cache: DraftCache) -> torch.Tensor:
        """noise [B, T, H]: the embedded block at positions start .. start+T-1; features [B, C, L*H]:
        target features of positions start-C .. start-1 (appended to the cache). -> [B, T, H], normed."""
        t, c = noise.shape[1], features.shape[1]
        if cache.length != start - c:
            raise RuntimeError(f"draft cache holds {cache.length} positions, expected {start - c}")
        if self._graph_block and cache.static and t == self._graph_block and c <= self._graph_block \
                and start - c + self._graph_block <= cache.capacity and self._rope is not None \
                and self._rope[0].shape[0] >= cache.capacity + self._graph_block and self._rope[0].dtype == noise.dtype:
            return self._forward_fixed(noise, features, start, cache)
        ctx = self.hidden_norm(self.fc(features))  # [B, C, H]
        cos, sin = self.rope(start - c, start + t, noise)
        masks: dict[tuple[bool, Optional[int]], Optional[torch.Tensor]] = {}
        h = noise
        for i, layer in enumerate(self.layers):
            key = (layer.causal, layer.window)
            if key not in masks:
                if cache.static:  # keys: the whole buffer, the positions past the block masked
                    masks[key] = attention_mask(start, t, cache.capacity, layer.causal, layer.window, noise.device,
                                                self.cfg.window_inclusive, valid=start + t)
                else:
                    masks[key] = attention_mask(start, t, start + t, layer.causal, layer.window, noise.device,
                                                self.cfg.window_inclusive)
            h = layer(h, ctx, cos, sin, cache, i, masks[key])
        cache.length = start
        return self.norm(h)

    def forward_masked(self, noise: torch.Tensor, features: torch.Tensor, positions: torch.Tensor,
                       masks: Callable[[bool, Optional[int]], Optional[torch.Tensor]]) -> torch.Tensor:
        """Training entry point: the same layers as `forward`, on any number of blocks at once, with
        caller-made attention masks and no cache.

        noise [B, Q, H]: embedded block tokens; features [B, C, L*H]: target features of positions
        0 .. C-1; positions [Q]: each block token's RoPE position; masks(causal, window) -> [Q, C+Q]
        boolean (True = visible; keys are the C context positions, then the Q block tokens) for the
        layers of that kind. -> [B, Q, H], normed. With one block at positions start .. start+T-1 that
        sees all C = start context positions, this is `forward` on an empty cache.
        """
        c = features.shape[1]
        ctx = self.hidden_norm(self.fc(features))  # [B, C, H]
        end = max(c, int(positions.max()) + 1)
        cos, sin = self.rope(0, end, noise)  # [end, D]
        index = torch.cat([torch.arange(c, device=positions.device), positions])  # [C+Q]
        cos, sin = cos[index], sin[index]
        built: dict[tuple[bool, Optional[int]], Optional[torch.Tensor]] = {}
        h, cache = noise, _NoCache()
        for i, layer in enumerate(self.layers):
            key = (layer.causal, layer.window)
            if key not in built:
                built[key] = masks(*key)
            h = layer(h, ctx, cos, sin, cache, i, built[key])
        return self.norm(h)

    def compute_logits(self, hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """Target head on the draft's hidden states [B, T, H] -> [B, T, V], with the draft's
        output multiplier and soft-cap."""
        logits = head(hidden)
        if self.cfg.output_multiplier != 1.0:
            logits = logits * self.cfg.output_multiplier
        cap = self.cfg.final_logit_softcapping
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
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
    """An uninitialised draft module (weights on the meta device until loaded)."""
    cls = DFlash2DraftModel if cfg.version == 2 else DFlashDraftModel
    with torch.device("meta"):
        return cls(cfg, raw_config)


def load_draft_weights(folder: Union[str, Path], files: Optional[list[Path]] = None) -> dict[str, torch.Tensor]:
    """Every tensor of the draft's checked *.safetensors files (never pickles), names normalised."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    for path in files if files is not None else draft_files(folder):
        try:
            tensors = load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError) as exc:
            raise WeightsError(f"{path}: cannot read safetensors ({one_line(exc)})") from None
        for name, tensor in tensors.items():
            put_tensor(state, name, tensor, path)
    return state


def load_draft(
    ref: Union[str, Path],
    *,
    device: Union[str, torch.device] = "cpu",
    dtype: torch.dtype = torch.float32,
    token: Optional[str] = None,
) -> DFlashDraftModel:
    """Load a z-lab draft (a local folder or a Hub repo id) into our modules, in eval mode."""
    ckpt = draft_checkpoint(ref, token=token)
    model = build_draft(ckpt.cfg, ckpt.raw)
    state = load_draft_weights(ref, ckpt.files)
    check_state({k: tuple(v.shape) for k, v in model.state_dict().items()},
                {k: tuple(v.shape) for k, v in state.items()}, f"draft {ref}")
    model.load_state_dict(state, strict=True, assign=True)
    return model.to(device=device, dtype=dtype).eval()
