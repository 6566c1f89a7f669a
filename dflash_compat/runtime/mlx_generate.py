"""DFlash speculative decoding in MLX (batch size 1), streamed or collected, and a plain greedy baseline.

prefill -> loop { draft_block -> verify_block -> accept_greedy | accept_sampling -> rollback }.
The loop itself is core.py's, shared with PyTorch; this module holds the MLX steps it calls, with
the same names and signatures as torch_generate.py. The target is an MLXTarget (mlx_target.py):
an mlx-lm model behind its adapter. MLX is lazy: each step builds the draft and verify graphs and
syncs once, when the accepted tokens are read.
"""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from typing import Iterator, Optional, Sequence, Union

import mlx.core as mx

from dflash_compat.exceptions import InputError
from dflash_compat.runtime.core import (
    ATTENTION_CHOICES,
    CACHE_KINDS,
    GREEDY,
    Sampling,
    StreamStep,
    accept_prefix,
    check_length,
    check_pairing,
    check_spec_run,
    check_token_ids,
    eos_ids,
    greedy_steps,
    spec_generate_of,
    spec_steps,
    step_of,
    within,
)
from dflash_compat.runtime.mlx_draft import DFlash2DraftModel, DFlashDraftModel, load_draft
from dflash_compat.runtime.mlx_target import MLXTarget, load_target, target_for
from dflash_compat.runtime.stats import GenerationResult, GenerationStats
from dflash_compat.runtime.target import TargetOutput

__all__ = [
    "Sampling",
    "StreamStep",
    "load_target",
    "load_draft",
    "target_for",
    "check_pairing",
    "stop_tokens_of",
    "new_rng",
    "sampling_probs",
    "pick",
    "token_block",
    "join_block",
    "prefill",
    "draft_block",
    "verify_block",
    "accept_greedy",
    "accept_sampling",
    "stream_generate",
    "spec_generate",
    "greedy_generate",
    "generate_baseline",
    "divergence_margins",
]

# MLX has one attention kernel (mx.fast.scaled_dot_product_attention); it builds no graph per shape
ATTENTION_LABEL = "mlx: mx.fast.scaled_dot_product_attention"

Tokens = Union[Sequence[int], mx.array]
PREFILL_STEP = 2048  # prompt tokens per target forward during the prefill (bounds the graph)


def stop_tokens_of(target: MLXTarget) -> list[int]:
    """The target's EOS token ids (mlx-lm's config, which already holds generation_config's)."""
    return eos_ids(target.config.get("eos_token_id"))


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


class Keys:
    """A stream of PRNG keys from one seed (None: MLX's global generator)."""

    def __init__(self, seed: Optional[int]) -> None:
        self._key = mx.random.key(seed) if seed is not None else None

    def next(self) -> Optional[mx.array]:
        if self._key is None:
            return None
        self._key, sub = mx.random.split(self._key)
        return sub


Rng = Optional[Keys]


def new_rng(seed: Optional[int], device: None = None) -> Keys:
    """The random stream of one run: PRNG keys split from `seed` (None: MLX's global generator).
    `device` is accepted for symmetry with the PyTorch runtime (MLX keys live on no device)."""
    return Keys(seed)


def sampling_probs(logits: mx.array, sampling: Sampling) -> mx.array:
    """The distribution a sampler draws from: softmax(logits / T) restricted to the top-k tokens
    and to the smallest set whose mass reaches top_p, renormalised. [..., V] -> float32 [..., V]."""
    scores = logits.astype(mx.float32) / sampling.temperature
    if 0 < sampling.top_k < scores.shape[-1]:
        kth = mx.sort(scores, axis=-1)[..., -sampling.top_k:][..., :1]  # [..., 1] the k-th largest score
        scores = mx.where(scores < kth, -mx.inf, scores)
    probs = mx.softmax(scores, axis=-1)
    if sampling.top_p < 1.0:
        order = mx.argsort(-probs, axis=-1)
        sorted_probs = mx.take_along_axis(probs, order, axis=-1)
        # keep a token while the mass strictly before it is < top_p (the first token always stays)
        sorted_probs = mx.where((mx.cumsum(sorted_probs, axis=-1) - sorted_probs) < sampling.top_p, sorted_probs, 0.0)
        probs = mx.put_along_axis(mx.zeros_like(probs), order, sorted_probs, axis=-1)
        probs = probs / mx.sum(probs, axis=-1, keepdims=True)
    return probs


def _sample(probs: mx.array, rng: Rng) -> mx.array:
    # [..., V] -> [...]
    return mx.random.categorical(mx.log(probs), axis=-1, key=rng.next() if rng is not None else None)


def pick(logits: mx.array, sampling: Sampling, rng: Rng = None) -> int:
    """The target's own next token from logits [V]: the argmax, or a sample."""
    if sampling.greedy:
        return int(mx.argmax(logits, axis=-1).item())
    return int(_sample(sampling_probs(logits, sampling), rng).item())


def token_block(token: int, like: mx.array) -> mx.array:
    """One committed token as a [1, 1] block of ids (int32, as the prompt)."""
    return mx.array([[token]], dtype=like.dtype)


def join_block(last: mx.array, proposed: mx.array) -> mx.array:
    """[1, 1] last committed token + [1, g] proposals -> the block the target verifies [1, g+1]."""
    return mx.concatenate([last, proposed.astype(last.dtype)], axis=1)


# ---------------------------------------------------------------------------------------------
# the steps
# ---------------------------------------------------------------------------------------------


def prefill(target: MLXTarget, input_ids: mx.array, cache, capture: Sequence[int],
            step: Optional[int] = PREFILL_STEP) -> TargetOutput:
    """Run the prompt [1, n] (in chunks of `step` positions; None: one forward); -> logits of the
    last position [1, 1, V] and features [1, n, L*H]."""
    # evaluate chunk by chunk: one lazy graph for the whole prompt is what chunking avoids
    out, feats = target.prefill_chunks(input_ids, cache, capture, step, between=lambda feats: mx.eval(
        [e.state for e in getattr(cache, "entries", [])], [f for f in feats if f is not None]))
    return out if len(feats) == 1 or not capture else TargetOutput(out.logits, mx.concatenate(feats, axis=1))


def draft_block(draft: DFlashDraftModel, target: MLXTarget, last: mx.array, features: mx.array, start: int,
                cache, size: int, sampling: Sampling = GREEDY, rng: Rng = None) -> tuple[mx.array, Optional[mx.array]]:
    """Propose size-1 tokens after `last` [1, 1] (at position `start`) in one draft forward.

    features [1, C, L*H]: target features of positions start-C .. start-1 not yet in the draft cache.
    -> tokens [1, size-1], and when sampling their proposal distributions [1, size-1, V].
    """
    mask = mx.full((1, size - 1), draft.mask_token_id, dtype=last.dtype)
    block = mx.concatenate([last, mask], axis=1)  # [1, size]: the last committed token, then masks
    noise = target.embed(block)  # [1, size, H]
    if draft.cfg.input_embedding_scale != 1.0:
        noise = noise * draft.cfg.input_embedding_scale
    hidden = draft(noise, features, start, cache)[:, 1:]  # [1, size-1, H]: predictions for positions 1..
    logits = draft.compute_logits(hidden, target.head)  # [1, size-1, V]
    if isinstance(draft, DFlash2DraftModel):
        key = rng.next() if rng is not None else None
        return draft.candidate_selector.select(hidden, logits, last[:, 0], sampling.temperature, key)
    if sampling.greedy:
        return mx.argmax(logits, axis=-1), None
    probs = sampling_probs(logits, sampling)
    return _sample(probs, rng), probs


def verify_block(target: MLXTarget, block: mx.array, cache, start: int, capture: Sequence[int]) -> TargetOutput:
    """Target forward on block [1, size] at positions start ..; logits [1, size, V], features [1, size, L*H]."""
    return target.forward(block, cache, start, capture=capture)


def accept_greedy(draft_tokens: mx.array, logits: mx.array) -> tuple[int, list[int]]:
    """draft_tokens [1, g], target logits [1, g+1, V] -> (accepted draft tokens, new tokens).

    Exact: the new tokens are what greedy decoding of the target alone would produce.
    """
    posterior = mx.argmax(logits[0], axis=-1)  # [g+1] the target's argmax after each prefix of the block
    both = mx.concatenate([posterior, draft_tokens[0].astype(posterior.dtype)]).tolist()  # one sync
    g = draft_tokens.shape[1]
    return accept_prefix(both[g + 1:], both[: g + 1])


def accept_sampling(draft_tokens: mx.array, draft_probs: mx.array, target_probs: mx.array,
                    rng: Rng = None) -> tuple[int, list[int]]:
    """Speculative rejection sampling: the new tokens are distributed exactly as sampling the target.

    draft_tokens [1, g] drawn from draft_probs [1, g, V]; target_probs [1, g+1, V].
    Token k is accepted with probability min(1, p/q); at the first rejection the replacement is
    drawn from norm(max(p - q, 0)); if all g are accepted a bonus is drawn from p[g].
    """
    g = draft_tokens.shape[1]
    tok = draft_tokens[0]  # [g]
    p = mx.take_along_axis(target_probs[0, :g], tok[:, None], axis=-1)[:, 0]  # [g] target probability of each
    q = mx.take_along_axis(draft_probs[0], tok[:, None], axis=-1)[:, 0]  # [g] draft probability of each
    u = mx.random.uniform(shape=(g,), key=rng.next() if rng is not None else None)
    # accept with probability min(1, p/q), up to the first rejection
    accepted = mx.cumprod((u * q < p).astype(mx.int32))
    n = int(mx.sum(accepted).item())
    if n == g:
        nxt = _sample(target_probs[0, g], rng)
    else:
        residual = mx.maximum(target_probs[0, n] - draft_probs[0, n], 0.0)  # [V]
        total = mx.sum(residual)
        # p == q everywhere leaves nothing: then p itself is the right distribution
        nxt = _sample(mx.where(total > 0, residual / mx.maximum(total, 1e-30), target_probs[0, n]), rng)
    return n, tok[:n].tolist() + [int(nxt.item())]


# ---------------------------------------------------------------------------------------------
# the loops (core.py's, with this module's steps)
# ---------------------------------------------------------------------------------------------


def _as_ids(input_ids: Tokens, target: MLXTarget) -> mx.array:
    if isinstance(input_ids, mx.array):
        ids = input_ids
    else:
        try:
            ids = mx.array(list(input_ids))
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise InputError("input_ids must be a sequence of integer token ids") from None
    if ids.size and not mx.issubdtype(ids.dtype, mx.integer):
        raise InputError("input_ids must be integer token ids")
    ids = ids[None] if ids.ndim == 1 else ids
    if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise InputError("input_ids must be one non-empty prompt (batch size 1)")
    check_token_ids(ids[0].tolist(), target.vocab_size)  # before the int32 cast can wrap them
    return ids.astype(mx.int32)


def _check_options(attention: str, cache: str, graphs: bool = False) -> None:
    """torch_generate's run options, as far as MLX has them: one attention kernel, a dynamic cache,
    no CUDA graphs."""
    if graphs:
        raise InputError("graphs: CUDA graphs are for the torch runtime on CUDA")
    if attention not in ATTENTION_CHOICES or cache not in CACHE_KINDS:
        raise InputError(f"attention {attention!r} / cache {cache!r}: expected one of {', '.join(ATTENTION_CHOICES)} "
                         f"/ {', '.join(CACHE_KINDS)}")
    if attention != "auto":
        raise InputError(f"attention {attention!r}: the MLX runtime has one attention kernel; use auto")
    if cache != "dynamic":
        raise InputError("cache 'static': the MLX runtime has no static cache; use dynamic")


def stream_generate(draft: DFlashDraftModel, target: MLXTarget, input_ids: Tokens, *, max_new_tokens: int,
                    stop_token_ids: Sequence[int] = (), sampling: Optional[Sampling] = None,
                    block_size: Optional[int] = None, prefill_step: Optional[int] = PREFILL_STEP,
                    timed: bool = True, attention: str = "auto", cache: str = "dynamic",
                    graphs: bool = False) -> Iterator[StreamStep]:
    """DFlash speculative decoding of one prompt, step by step: as torch_generate.stream_generate, the
    same parameters and results. `timed` is accepted for symmetry (MLX timing needs no extra syncs);
    `attention` and `cache` take auto / dynamic only, `graphs` False only."""
    sampling = sampling or GREEDY
    _check_options(attention, cache, graphs)
    ids = _as_ids(input_ids, target)
    bs = check_spec_run(draft, target, ids.shape[1], max_new_tokens, block_size)
    steps = spec_steps(
        sys.modules[__name__], draft, target, ids, max_new_tokens=max_new_tokens,
        stops={int(s) for s in stop_token_ids}, sampling=sampling, block_size=bs,
        rng=new_rng(sampling.seed), clock=time.perf_counter, prefill_step=prefill_step,
    )
    return (yield from within(steps, nullcontext, ATTENTION_LABEL))


spec_generate = spec_generate_of(stream_generate)


def greedy_generate(target: MLXTarget, input_ids: Tokens, *, max_new_tokens: int, stop_token_ids: Sequence[int] = (),
                    prefill_step: Optional[int] = PREFILL_STEP, timed: bool = True, attention: str = "auto",
                    cache: str = "dynamic", graphs: bool = False) -> GenerationResult:
    """Plain greedy decoding of the target alone, one token per forward: the lossless reference
    and the speed baseline. Same result shape as spec_generate (block size 1, tau 1)."""
    _check_options(attention, cache, graphs)
    ids = _as_ids(input_ids, target)
    check_length(target, ids.shape[1], max_new_tokens)
    result = greedy_steps(sys.modules[__name__], target, ids, max_new_tokens=max_new_tokens,
                          stops={int(s) for s in stop_token_ids}, clock=time.perf_counter,
                          prefill_step=prefill_step)
    result.stats.attention = ATTENTION_LABEL
    return result


def generate_baseline(target: MLXTarget, input_ids: Tokens, *, max_new_tokens: int,
                      stop_token_ids: Sequence[int] = (), attention: str = "auto",
                      cache: str = "dynamic") -> Optional[GenerationResult]:
    """torch_generate.generate_baseline's place: mlx-lm's own generate loop is not timed here (its
    greedy path is the same one-token-per-forward loop as greedy_generate), so None."""
    _check_options(attention, cache)
    return None


def _top2(logits: mx.array, spec_token: int, baseline_token: int) -> dict:
    """logits [V] -> the top-1 / top-2 tokens and logits, and the two tokens' logits (torch_generate's)."""
    logits = logits.astype(mx.float32)
    order = mx.argsort(-logits)[:2].tolist()
    values = [float(logits[i].item()) for i in order]
    return {"top1": order[0], "top1_logit": values[0], "top2": order[-1], "top2_logit": values[-1],
            "margin": values[0] - values[-1], "spec_logit": float(logits[spec_token].item()),
            "baseline_logit": float(logits[baseline_token].item())}


def divergence_margins(draft: DFlashDraftModel, target: MLXTarget, prompt: Sequence[int], output: Sequence[int],
                       index: int, stats: GenerationStats, spec_token: int, baseline_token: int,
                       attention: str = "auto") -> dict:
    """As torch_generate.divergence_margins: the target's logits at output position `index`, in a verify
    block shaped as the speculative run's and in a one-token forward, each from a fresh prefill."""
    _check_options(attention, "dynamic")
    context = [int(t) for t in prompt] + [int(t) for t in output[:index]]
    n_prompt = len(prompt)

    def last_logits(prefix: Sequence[int], tail: Sequence[int], row: int) -> mx.array:
        cache = target.new_cache()
        if prefix:
            target.forward(mx.array([list(prefix)], dtype=mx.int32), cache, 0, logits_to_keep=1)
        out = target.forward(mx.array([list(tail)], dtype=mx.int32), cache, len(prefix))
        return out.logits[0, row]

    begin, size = step_of(index, stats.acceptance_lengths, stats.drafted)
    if index == 0:
        block = single = last_logits([], context, len(context) - 1)
    else:
        first = n_prompt + begin - 1
        known = context[first:]
        pad = [int(draft.mask_token_id)] * max(size - len(known), 0)
        block = last_logits(context[:first], known + pad, len(known) - 1)
        single = last_logits(context[:-1], context[-1:], 0)
    return {"block": _top2(block, spec_token, baseline_token), "single": _top2(single, spec_token, baseline_token)}
