"""DFlash speculative decoding in MLX (batch size 1), a streaming variant, and a plain greedy baseline.

prefill -> loop { draft_block -> verify_block -> accept_greedy | accept_sampling -> rollback }.
The target is reached only through a TargetAdapter (adapters/mlx_default.py for mlx-lm models).
Mirrors `torch_generate.py` function for function; `stream_generate` is the loop, `spec_generate`
collects it. MLX is lazy: each step builds the draft and verify graphs and syncs once, when the
accepted tokens are read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

import mlx.core as mx

from ..adapters.base import TargetAdapter, TargetOutput
from ..exceptions import InputError, RemoteCodeError, RuntimeUnsupportedError, WeightsError
from .mlx_draft import DFlash2DraftModel, DFlashDraftModel, load_draft
from .draft_config import INITIAL_DRAFT_CAPACITY, check_length as _check_length, check_pairing
from .stats import GenerationResult, GenerationStats

__all__ = [
    "load_target",
    "load_draft",
    "check_pairing",
    "sampling_probs",
    "prefill",
    "draft_block",
    "verify_block",
    "accept_greedy",
    "accept_sampling",
    "StreamStep",
    "stream_generate",
    "spec_generate",
    "greedy_generate",
    "stop_tokens_of",
]

Tokens = Union[Sequence[int], mx.array]
PREFILL_STEP = 2048  # prompt tokens per target forward during the prefill (bounds the graph)


# ---------------------------------------------------------------------------------------------
# loading and checks
# ---------------------------------------------------------------------------------------------


def load_target(
    ref: Union[str, Path],
    *,
    dtype: Optional[mx.Dtype] = None,
    trust_remote_code: bool = False,
    token: Optional[str] = None,
    adapter: Optional[str] = None,
) -> TargetAdapter:
    """Load an mlx-lm target (folder or Hub id; safetensors only) and wrap it in its adapter.
    `dtype` casts the floating-point weights (None keeps the checkpoint's); `adapter`: a shim file
    or built-in adapter name (default: chosen by model_type)."""
    from mlx_lm.utils import load_model

    from ..adapters.mlx_default import mlx_adapter_for
    from ..resolve import download_weights, resolve

    resolved = resolve(str(ref), "target", token=token)
    folder = Path(download_weights(resolved, token=token, trust_remote_code=trust_remote_code))
    if not list(folder.glob("*.safetensors")):
        raise WeightsError(f"target {ref}: no *.safetensors files (pickled weights are never loaded)")
    try:
        model, config = load_model(folder, trust_remote_code=trust_remote_code)
    except ValueError as exc:
        text = _one_line(exc)
        if "trust_remote_code" in text:
            raise RemoteCodeError(
                f"target {ref}: the model needs its repository's own code; pass --trust-remote-code if you trust it"
            ) from None
        if text.startswith(("Missing", "Received", "Expected shape")) or "parameters" in text:
            # mlx-lm's load_weights(strict=True): the checkpoint does not match its config.json
            raise WeightsError(f"target {ref}: the weights do not match its config.json ({text})") from None
        raise RuntimeUnsupportedError(f"target {ref}: mlx-lm cannot load it ({text})") from None
    except (RuntimeError, OSError) as exc:  # mx.load on a truncated / corrupt safetensors file
        raise WeightsError(f"target {ref}: cannot load its weights ({_one_line(exc)})") from None
    if dtype is not None:
        model.set_dtype(dtype)
    return mlx_adapter_for(model, config, adapter)


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """An exception's message on one line (mlx-lm lists missing parameters one per line)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + " ..."


def stop_tokens_of(adapter: TargetAdapter) -> list[int]:
    """The target's EOS token ids (mlx-lm's config, which already holds generation_config's)."""
    eos = getattr(adapter, "config", {}).get("eos_token_id")
    if eos is None:
        return []
    return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


class _Keys:
    """A stream of PRNG keys from one seed (None: MLX's global generator)."""

    def __init__(self, seed: Optional[int]) -> None:
        self._key = mx.random.key(seed) if seed is not None else None

    def next(self) -> Optional[mx.array]:
        if self._key is None:
            return None
        self._key, sub = mx.random.split(self._key)
        return sub


def sampling_probs(logits: mx.array, temperature: float, top_p: float = 1.0, top_k: int = 0) -> mx.array:
    """The distribution a sampler draws from: softmax(logits / T) restricted to the top-k tokens
    and to the smallest set whose mass reaches top_p, renormalised. [..., V] -> float32 [..., V]."""
    scores = logits.astype(mx.float32) / temperature
    if 0 < top_k < scores.shape[-1]:
        kth = mx.sort(scores, axis=-1)[..., -top_k:][..., :1]  # [..., 1] the k-th largest score
        scores = mx.where(scores < kth, -mx.inf, scores)
    probs = mx.softmax(scores, axis=-1)
    if top_p < 1.0:
        order = mx.argsort(-probs, axis=-1)
        sorted_probs = mx.take_along_axis(probs, order, axis=-1)
        # keep a token while the mass strictly before it is < top_p (the first token always stays)
        sorted_probs = mx.where((mx.cumsum(sorted_probs, axis=-1) - sorted_probs) < top_p, sorted_probs, 0.0)
        probs = mx.put_along_axis(mx.zeros_like(probs), order, sorted_probs, axis=-1)
        probs = probs / mx.sum(probs, axis=-1, keepdims=True)
    return probs


def _sample(probs: mx.array, keys: _Keys) -> mx.array:
    # [..., V] -> [...]
    return mx.random.categorical(mx.log(probs), axis=-1, key=keys.next())


def _pick(logits: mx.array, temperature: float, top_p: float, top_k: int, keys: _Keys) -> mx.array:
    """The target's own next token from logits [..., V]: argmax, or a sample."""
    if temperature <= 0:
        return mx.argmax(logits, axis=-1)
    return _sample(sampling_probs(logits, temperature, top_p, top_k), keys)


# ---------------------------------------------------------------------------------------------
# the steps
# ---------------------------------------------------------------------------------------------


def prefill(target: TargetAdapter, input_ids: mx.array, cache, capture: Sequence[int],
            step: int = PREFILL_STEP) -> TargetOutput:
    """Run the prompt [1, n] (in chunks of `step`); -> logits of the last position [1, 1, V] and
    features [1, n, L*H]."""
    n = input_ids.shape[1]
    feats, out = [], None
    for begin in range(0, n, step):
        out = target.forward(input_ids[:, begin:begin + step], cache, begin, capture=capture, logits_to_keep=1)
        if capture:
            feats.append(out.features)
        if begin + step < n:
            mx.eval([e.state for e in cache.entries] if hasattr(cache, "entries") else [], feats)
    target.rollback(cache, n)  # a no-op: mlx-lm sliding-window caches keep their window themselves
    if not capture:
        return out
    return TargetOutput(out.logits, feats[0] if len(feats) == 1 else mx.concatenate(feats, axis=1))


def draft_block(
    draft: DFlashDraftModel,
    target: TargetAdapter,
    last: mx.array,
    features: mx.array,
    start: int,
    cache,
    size: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    keys: Optional[_Keys] = None,
) -> tuple[mx.array, Optional[mx.array]]:
    """Propose size-1 tokens after `last` [1, 1] (at position `start`) in one draft forward.

    features [1, C, L*H]: target features of positions start-C .. start-1 not yet in the draft cache.
    -> tokens [1, size-1], and with temperature > 0 their proposal distributions [1, size-1, V].
    """
    keys = keys or _Keys(None)
    mask = mx.full((1, size - 1), draft.mask_token_id, dtype=last.dtype)
    block = mx.concatenate([last, mask], axis=1)  # [1, size]: the last committed token, then masks
    noise = target.embed(block)  # [1, size, H]
    if draft.cfg.input_embedding_scale != 1.0:
        noise = noise * draft.cfg.input_embedding_scale
    hidden = draft(noise, features, start, cache)[:, 1:]  # [1, size-1, H]: predictions for positions 1..
    logits = draft.compute_logits(hidden, target.head)  # [1, size-1, V]
    if isinstance(draft, DFlash2DraftModel):
        return draft.candidate_selector.select(hidden, logits, last[:, 0], temperature, keys.next())
    if temperature <= 0:
        return mx.argmax(logits, axis=-1), None
    probs = sampling_probs(logits, temperature, top_p, top_k)
    return _sample(probs, keys), probs


def verify_block(target: TargetAdapter, block: mx.array, cache, start: int, capture: Sequence[int]) -> TargetOutput:
    """Target forward on block [1, size] at positions start ..; logits [1, size, V], features [1, size, L*H]."""
    return target.forward(block, cache, start, capture=capture)


def accept_greedy(draft_tokens: mx.array, logits: mx.array) -> tuple[int, list[int]]:
    """draft_tokens [1, g], target logits [1, g+1, V] -> (accepted draft tokens, new tokens).

    The target's argmax after each prefix of the block; draft tokens are accepted while they equal
    it, and the target's token after the last accepted one is the bonus. Exact: the new tokens are
    what greedy decoding of the target alone would produce.
    """
    posterior = mx.argmax(logits[0], axis=-1)  # [g+1]
    both = mx.concatenate([posterior, draft_tokens[0].astype(posterior.dtype)]).tolist()  # one sync
    g = draft_tokens.shape[1]
    target_says, proposed = both[: g + 1], both[g + 1:]
    n = 0
    while n < g and proposed[n] == target_says[n]:
        n += 1
    return n, target_says[: n + 1]


def accept_sampling(
    draft_tokens: mx.array,
    draft_probs: mx.array,
    target_probs: mx.array,
    keys: Optional[_Keys] = None,
) -> tuple[int, list[int]]:
    """Speculative rejection sampling: the new tokens are distributed exactly as sampling the target.

    draft_tokens [1, g] drawn from draft_probs [1, g, V]; target_probs [1, g+1, V].
    Token k is accepted with probability min(1, p/q); at the first rejection the replacement is
    drawn from norm(max(p - q, 0)); if all g are accepted a bonus is drawn from p[g].
    """
    keys = keys or _Keys(None)
    g = draft_tokens.shape[1]
    tok = draft_tokens[0]  # [g]
    p = mx.take_along_axis(target_probs[0, :g], tok[:, None], axis=-1)[:, 0]  # [g] target probability of each
    q = mx.take_along_axis(draft_probs[0], tok[:, None], axis=-1)[:, 0]  # [g] draft probability of each
    u = mx.random.uniform(shape=(g,), key=keys.next())
    accepted = mx.cumprod((u * q < p).astype(mx.int32))  # accept with probability min(1, p/q), up to the first rejection
    n = int(mx.sum(accepted).item())
    if n == g:
        nxt = _sample(target_probs[0, g], keys)
    else:
        residual = mx.maximum(target_probs[0, n] - draft_probs[0, n], 0.0)  # [V]
        total = mx.sum(residual)
        # p == q everywhere leaves nothing: then p itself is the right distribution
        nxt = _sample(mx.where(total > 0, residual / mx.maximum(total, 1e-30), target_probs[0, n]), keys)
    return n, tok[:n].tolist() + [int(nxt.item())]


# ---------------------------------------------------------------------------------------------
# the loops
# ---------------------------------------------------------------------------------------------


def _as_ids(input_ids: Tokens, vocab_size: int) -> mx.array:
    if isinstance(input_ids, mx.array):
        ids = input_ids
    else:
        try:
            ids = mx.array(list(input_ids))
        except (TypeError, ValueError, RuntimeError):
            raise InputError("input_ids must be a sequence of integer token ids") from None
    if ids.size and not mx.issubdtype(ids.dtype, mx.integer):
        raise InputError("input_ids must be integer token ids")
    ids = ids[None] if ids.ndim == 1 else ids
    if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise InputError("input_ids must be one non-empty prompt (batch size 1)")
    bad = [t for t in ids[0].tolist() if not 0 <= t < vocab_size]  # before the int32 cast can wrap them
    if bad:
        raise InputError(f"input_ids: token id {bad[0]} is outside the target's vocabulary (0..{vocab_size - 1})")
    return ids.astype(mx.int32)



def _validate_sampling(temperature: float, top_p: float, top_k: int) -> None:
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0:
        raise InputError("temperature and top_k must be >= 0, and top_p in (0, 1]")


@dataclass
class StreamStep:
    """One step of `stream_generate`: the tokens it committed (the first step: the prefill's token)."""

    tokens: list[int]
    accepted: int  # draft tokens accepted (0 on the prefill step)
    drafted: int  # draft tokens proposed (0 on the prefill step)
    stats: GenerationStats  # the running stats; final once the stream is exhausted
    finish_reason: Optional[str] = None  # "stop" | "length" on the last step


def stream_generate(
    draft: DFlashDraftModel,
    target: TargetAdapter,
    input_ids: Tokens,
    *,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    block_size: Optional[int] = None,
    seed: Optional[int] = None,
    prefill_step: int = PREFILL_STEP,
) -> Iterator[StreamStep]:
    """DFlash speculative decoding of one prompt, yielding each step's committed tokens as soon as
    they are known. Greedy (temperature 0) output is token-for-token the target's greedy output;
    with temperature > 0 it is distributed as the target's sampling."""
    _validate_sampling(temperature, top_p, top_k)
    target.require_rollback()
    check_pairing(draft, target)
    bs = draft.block_size if block_size is None else block_size
    if not 1 <= bs <= draft.block_size:
        raise InputError(f"block size {bs} must be between 1 and the draft's block_size {draft.block_size}")
    ids = _as_ids(input_ids, target.vocab_size)
    n_prompt = ids.shape[1]
    _check_length(target, n_prompt, max_new_tokens)
    stats = GenerationStats(block_size=bs, num_prompt_tokens=n_prompt)
    if max_new_tokens <= 0:
        return
    stops = set(int(s) for s in stop_token_ids)
    keys = _Keys(seed)
    capture = draft.target_layer_ids if bs > 1 else ()

    t0 = time.perf_counter()
    cache = target.new_cache()
    out = prefill(target, ids, cache, capture, prefill_step)
    tokens = [int(_pick(out.logits[0, -1], temperature, top_p, top_k, keys).item())]
    features = out.features  # [1, n, L*H]: context not yet in the draft cache
    draft_cache = draft.new_cache(capacity=n_prompt + min(max_new_tokens, INITIAL_DRAFT_CAPACITY) + bs)
    t1 = time.perf_counter()
    stats.num_new_tokens, stats.prefill_s = 1, t1 - t0

    def finished() -> Optional[str]:
        if tokens[-1] in stops:
            return "stop"
        return "length" if len(tokens) >= max_new_tokens else None

    yield StreamStep([tokens[0]], 0, 0, stats, finished())
    start = n_prompt  # position of the last committed token (not yet in the target cache)
    while finished() is None:
        size = min(bs, max_new_tokens - len(tokens) + 1)
        last = mx.array([[tokens[-1]]], dtype=mx.int32)
        if size > 1:
            proposed, q = draft_block(draft, target, last, features, start, draft_cache, size,
                                      temperature, top_p, top_k, keys)
            block = mx.concatenate([last, proposed.astype(mx.int32)], axis=1)  # [1, size]
        else:
            block = last
        out = verify_block(target, block, cache, start, capture if size > 1 else ())
        if size == 1:
            n_acc, new = 0, [int(_pick(out.logits[0, -1], temperature, top_p, top_k, keys).item())]
        elif temperature > 0:
            n_acc, new = accept_sampling(proposed, q, sampling_probs(out.logits, temperature, top_p, top_k), keys)
        else:
            n_acc, new = accept_greedy(proposed, out.logits)
        new = new[: max_new_tokens - len(tokens)]
        for i, t in enumerate(new):
            if t in stops:
                new = new[: i + 1]
                break
        tokens += new
        stats.acceptance_lengths.append(len(new))
        stats.accepted.append(n_acc)
        stats.drafted.append(size - 1)
        start += len(new)
        target.rollback(cache, start)  # drop the rejected block positions
        if size > 1:
            features = out.features[:, : len(new)]  # accepted positions + the bonus position's input
        stats.num_new_tokens, stats.decode_s = len(tokens), time.perf_counter() - t1
        yield StreamStep(new, n_acc, size - 1, stats, finished())


def spec_generate(
    draft: DFlashDraftModel,
    target: TargetAdapter,
    input_ids: Tokens,
    *,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    block_size: Optional[int] = None,
    seed: Optional[int] = None,
    timed: bool = True,
) -> GenerationResult:
    """DFlash speculative decoding of one prompt (stream_generate, collected). Returns the generated
    ids (prompt excluded; the last is a stop token if one was produced) and GenerationStats.
    `timed` is accepted for symmetry with the PyTorch runtime (MLX timing needs no extra syncs)."""
    tokens: list[int] = []
    stats = GenerationStats(block_size=draft.block_size if block_size is None else block_size,
                            num_prompt_tokens=len(input_ids) if not isinstance(input_ids, mx.array) else input_ids.size)
    for step in stream_generate(draft, target, input_ids, max_new_tokens=max_new_tokens,
                                stop_token_ids=stop_token_ids, temperature=temperature, top_p=top_p,
                                top_k=top_k, block_size=block_size, seed=seed):
        tokens += step.tokens
        stats = step.stats
    return GenerationResult(tokens, stats)


def greedy_generate(
    target: TargetAdapter,
    input_ids: Tokens,
    *,
    max_new_tokens: int,
    stop_token_ids: Sequence[int] = (),
    timed: bool = True,
) -> GenerationResult:
    """Plain greedy decoding of the target alone, one token per forward: the lossless reference
    and the speed baseline. Same result shape as spec_generate (block size 1, tau 1)."""
    ids = _as_ids(input_ids, target.vocab_size)
    stats = GenerationStats(block_size=1, num_prompt_tokens=ids.shape[1])
    _check_length(target, ids.shape[1], max_new_tokens)
    if max_new_tokens <= 0:
        return GenerationResult([], stats)
    stops = set(int(s) for s in stop_token_ids)

    t0 = time.perf_counter()
    cache = target.new_cache()
    out = prefill(target, ids, cache, ())
    tokens = [int(mx.argmax(out.logits[0, -1]).item())]
    t1 = time.perf_counter()
    start = ids.shape[1]
    while len(tokens) < max_new_tokens and tokens[-1] not in stops:
        last = mx.array([[tokens[-1]]], dtype=mx.int32)
        out = target.forward(last, cache, start, logits_to_keep=1)
        tokens.append(int(mx.argmax(out.logits[0, -1]).item()))
        start += 1
        stats.acceptance_lengths.append(1)
        stats.accepted.append(0)
        stats.drafted.append(0)
    t2 = time.perf_counter()
    stats.num_new_tokens = len(tokens)
    stats.prefill_s, stats.decode_s = t1 - t0, t2 - t1
    return GenerationResult(tokens, stats)
