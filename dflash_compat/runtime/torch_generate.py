"""DFlash speculative decoding in PyTorch (batch size 1), streamed or collected, and a plain greedy baseline.

prefill -> loop { draft_block -> verify_block -> accept_greedy | accept_sampling -> rollback }.
The loop itself is core.py's, shared with MLX; this module holds the PyTorch steps it calls, with
the same names and signatures as mlx_generate.py. The target is a TorchTarget (torch_target.py):
a transformers model behind its adapter.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence, Union

import torch
from torch import Tensor

from dflash_compat.exceptions import InputError, RuntimeUnsupportedError
from dflash_compat.runtime.core import (
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
    static_capacity,
    step_of,
    within,
)
from dflash_compat.runtime.stats import GenerationResult, GenerationStats
from dflash_compat.runtime.target import TargetOutput
from dflash_compat.runtime.torch_attention import AttentionPolicy, attention_context, attention_policy
from dflash_compat.runtime.torch_draft import DFlash2DraftModel, DFlashDraftModel, load_draft
from dflash_compat.runtime.torch_target import TorchTarget, load_target, target_for

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

Tokens = Union[Sequence[int], torch.Tensor]
Rng = Optional[torch.Generator]


def stop_tokens_of(target: TorchTarget) -> list[int]:
    """The target's EOS token ids (generation_config first, then config)."""
    for source in (getattr(target.model, "generation_config", None), getattr(target.model, "config", None)):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is not None:
            return eos_ids(eos)
    return []


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


def new_rng(seed: Optional[int], device: Union[str, torch.device, None] = None) -> Rng:
    """The random stream of one run: a torch.Generator seeded with `seed` on `device` (None: torch's global one)."""
    return torch.Generator(device=device or "cpu").manual_seed(seed) if seed is not None else None


def sampling_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution a sampler draws from: softmax(logits / T) restricted to the top-k tokens
    and to the smallest set whose mass reaches top_p, renormalised. [..., V] -> float32 [..., V]."""
    scores = logits.float() / sampling.temperature
    if 0 < sampling.top_k < scores.shape[-1]:
        kth = torch.topk(scores, sampling.top_k, dim=-1).values[..., -1:]  # [..., 1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if sampling.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # keep a token while the mass strictly before it is < top_p (the first token always stays)
        sorted_probs = sorted_probs * ((sorted_probs.cumsum(-1) - sorted_probs) < sampling.top_p)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def _sample(probs: torch.Tensor, rng: Rng) -> torch.Tensor:
    # [..., V] -> [...]
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=rng).view(probs.shape[:-1])


def pick(logits: torch.Tensor, sampling: Sampling, rng: Rng = None) -> int:
    """The target's own next token from logits [V]: the argmax, or a sample."""
    if sampling.greedy:
        return int(logits.argmax(dim=-1))
    return int(_sample(sampling_probs(logits, sampling), rng))


def token_block(token: int, like: torch.Tensor) -> torch.Tensor:
    """One committed token as a [1, 1] block of ids, on the prompt's device."""
    return torch.tensor([[token]], dtype=like.dtype, device=like.device)


def join_block(last: torch.Tensor, proposed: torch.Tensor) -> torch.Tensor:
    """[1, 1] last committed token + [1, g] proposals -> the block the target verifies [1, g+1]."""
    return torch.cat([last, proposed], dim=1)


# ---------------------------------------------------------------------------------------------
# the steps
# ---------------------------------------------------------------------------------------------


def prefill(target: TorchTarget, input_ids: torch.Tensor, cache, capture: Sequence[int],
            step: Optional[int] = None) -> TargetOutput:
    """Run the prompt [1, n] (in chunks of `step` positions; None: one forward); -> logits of the
    last position [1, 1, V] and features [1, n, L*H]."""
    out, feats = target.prefill_chunks(input_ids, cache, capture, step)
    return out if len(feats) == 1 or not capture else TargetOutput(out.logits, torch.cat(feats, dim=1))


def draft_block(draft: DFlashDraftModel, target: TorchTarget, last: torch.Tensor, features: torch.Tensor, start: int,
                cache, size: int, sampling: Sampling = GREEDY, rng: Rng = None) -> tuple[Tensor, Optional[Tensor]]:
    """Propose size-1 tokens after `last` [1, 1] (at position `start`) in one draft forward.

    features [1, C, L*H]: target features of positions start-C .. start-1 not yet in the draft cache.
    -> tokens [1, size-1], and when sampling their proposal distributions [1, size-1, V].
    """
    mask = torch.full((1, size - 1), draft.mask_token_id, dtype=last.dtype, device=last.device)
    block = torch.cat([last, mask], dim=1)  # [1, size]: the last committed token, then masks
    noise = target.embed(block)  # [1, size, H]
    if draft.cfg.input_embedding_scale != 1.0:
        noise = noise * draft.cfg.input_embedding_scale
    hidden = draft(noise, features, start, cache)[:, 1:]  # [1, size-1, H]: predictions for positions 1..
    logits = draft.compute_logits(hidden, target.head)  # [1, size-1, V]
    if isinstance(draft, DFlash2DraftModel):
        return draft.candidate_selector.select(hidden, logits, last[:, 0], sampling.temperature, rng)
    if sampling.greedy:
        return logits.argmax(dim=-1), None
    probs = sampling_probs(logits, sampling)
    return _sample(probs, rng), probs


def verify_block(target: TorchTarget, block: torch.Tensor, cache, start: int, capture: Sequence[int]) -> TargetOutput:
    """Target forward on block [1, size] at positions start ..; logits [1, size, V], features [1, size, L*H]."""
    return target.forward(block, cache, start, capture=capture)


def accept_greedy(draft_tokens: torch.Tensor, logits: torch.Tensor) -> tuple[int, list[int]]:
    """draft_tokens [1, g], target logits [1, g+1, V] -> (accepted draft tokens, new tokens).

    Exact: the new tokens are what greedy decoding of the target alone would produce.
    """
    posterior = logits[0].argmax(dim=-1)  # [g+1] the target's argmax after each prefix of the block
    both = torch.cat([posterior, draft_tokens[0]]).tolist()  # one device sync
    g = draft_tokens.shape[1]
    return accept_prefix(both[g + 1:], both[: g + 1])


def accept_sampling(draft_tokens: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                    rng: Rng = None) -> tuple[int, list[int]]:
    """Speculative rejection sampling: the new tokens are distributed exactly as sampling the target.

    draft_tokens [1, g] drawn from draft_probs [1, g, V]; target_probs [1, g+1, V].
    Token k is accepted with probability min(1, p/q); at the first rejection the replacement is
    drawn from norm(max(p - q, 0)); if all g are accepted a bonus is drawn from p[g].
    """
    g = draft_tokens.shape[1]
    tok = draft_tokens[0]  # [g]
    rows = torch.arange(g, device=tok.device)
    p = target_probs[0, rows, tok]  # [g] target probability of each draft token
    q = draft_probs[0, rows, tok]  # [g] draft probability of each draft token
    u = torch.rand(g, generator=rng, device=tok.device)
    accepted = (u * q < p).int().cumprod(0)  # accept with probability min(1, p/q), up to the first rejection
    n = int(accepted.sum())
    if n == g:
        nxt = _sample(target_probs[0, g], rng)
    else:
        residual = (target_probs[0, n] - draft_probs[0, n]).clamp_min(0)  # [V]
        total = residual.sum()
        # p == q everywhere leaves nothing: then p itself is the right distribution
        nxt = _sample(residual / total if total > 0 else target_probs[0, n], rng)
    return n, tok[:n].tolist() + [int(nxt)]


# ---------------------------------------------------------------------------------------------
# the loops (core.py's, with this module's steps)
# ---------------------------------------------------------------------------------------------


def _as_ids(input_ids: Tokens, target: TorchTarget) -> torch.Tensor:
    try:
        ids = input_ids if isinstance(input_ids, torch.Tensor) else torch.tensor(list(input_ids))
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise InputError("input_ids must be a sequence of integer token ids") from None
    if ids.numel() and (ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool):
        raise InputError("input_ids must be integer token ids")
    ids = ids[None] if ids.dim() == 1 else ids
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise InputError("input_ids must be one non-empty prompt (batch size 1)")
    check_token_ids(ids[0].tolist(), target.vocab_size)
    return ids.to(device=target.device, dtype=torch.long)


def _check_placement(draft: DFlashDraftModel, target: TorchTarget) -> None:
    """Draft and target must share dtype and device: else the first draft matmul fails mid-run."""
    param = next(draft.parameters(), None)
    dtype, device = getattr(target, "dtype", None), getattr(target, "device", None)  # the embedding weight's
    if param is None or not isinstance(dtype, torch.dtype) or not isinstance(device, torch.device):
        return
    if param.dtype != dtype or param.device != device:
        raise RuntimeUnsupportedError(
            f"the draft is {str(param.dtype).removeprefix('torch.')} on {param.device}, the target's embedding "
            f"{str(dtype).removeprefix('torch.')} on {device}; load both with the same dtype and device"
        )


def _clock(device: torch.device, timed: bool):
    """perf_counter, after the queued CUDA work has finished when timings are wanted."""
    if not (timed and device.type == "cuda"):
        return time.perf_counter

    def now() -> float:
        torch.cuda.synchronize(device)
        return time.perf_counter()

    return now


# torch.compile's stand-in for use_graphs (None: mode="reduce-overhead", CUDA graphs); the CPU tests set a
# compiler with backend="eager" to run the same path without a GPU
_COMPILE_FN = None


def _set_graphs(target: TorchTarget, graphs: bool, cache: str, block_length: int,
                draft: Optional[DFlashDraftModel] = None, positions: int = 0) -> None:
    """graphs=True: CUDA graphs of the target's full-size verify block (TorchTarget.use_graphs) and of
    the draft's step (DFlashDraftModel.use_graphs; `positions`: the static capacity). They need a CUDA
    device and the static cache (fixed shapes); refused otherwise, before any forward. False: models
    compiled by an earlier run run eagerly again."""
    if not graphs:
        if getattr(target, "_graphed", None) is not None:
            target.use_graphs(0)
        if draft is not None and getattr(draft, "_graph_block", 0):
            draft.use_graphs(0, 0, target.embedding_rows(torch.zeros(1, 1, dtype=torch.long, device=target.device)))
        return
    device = getattr(target, "device", None)
    if cache != "static":
        raise InputError("CUDA graphs need the static cache (cache='static' / --cache static)")
    if _COMPILE_FN is None and not (isinstance(device, torch.device) and device.type == "cuda"):
        raise InputError(f"CUDA graphs need a CUDA device; the target is on {device}")
    target.use_graphs(block_length, _COMPILE_FN)
    if draft is not None and block_length > 1:
        like = target.embedding_rows(torch.zeros(1, 1, dtype=torch.long, device=target.device))  # dtype, device
        draft.use_graphs(block_length, positions, like, _COMPILE_FN)


def run_policy(target: TorchTarget, attention: str = "auto", cache: str = "dynamic") -> AttentionPolicy:
    """The attention kernels a run on this target's device uses (torch_attention.py), after checking
    the cache kind."""
    if cache not in CACHE_KINDS:
        raise InputError(f"cache {cache!r}: expected one of {', '.join(CACHE_KINDS)}")
    device = getattr(target, "device", None)
    device_type = device.type if isinstance(device, torch.device) else "cpu"
    return attention_policy(attention, device_type, static_cache=cache == "static")


@contextmanager
def _step_context(policy: AttentionPolicy) -> Iterator[None]:
    with torch.inference_mode(), attention_context(policy):
        yield


def stream_generate(draft: DFlashDraftModel, target: TorchTarget, input_ids: Tokens, *, max_new_tokens: int,
                    stop_token_ids: Sequence[int] = (), sampling: Optional[Sampling] = None,
                    block_size: Optional[int] = None, prefill_step: Optional[int] = None,
                    timed: bool = True, attention: str = "auto", cache: str = "dynamic",
                    graphs: bool = False) -> Iterator[StreamStep]:
    """DFlash speculative decoding of one prompt, yielding each step's committed tokens as soon as
    they are known; the generator returns the final GenerationStats. Greedy (the default sampling)
    is token-for-token the target's greedy output; a sample is distributed as the target's own.
    `prefill_step` chunks the prompt's forward (None: one forward). `timed=False` skips the CUDA
    synchronisations that timing needs. `attention`: the SDPA kernels torch may use (auto, flash,
    efficient, math, cudnn; see torch_attention.py); `cache`: "dynamic", or "static" (target and
    draft caches allocated once for prompt + max_new_tokens + one block: one attention shape);
    `graphs`: CUDA graphs of the target's full-size verify block and of the draft's step (CUDA and
    the static cache only)."""
    sampling = sampling or GREEDY
    policy = run_policy(target, attention, cache)
    _check_placement(draft, target)
    ids = _as_ids(input_ids, target)
    bs = check_spec_run(draft, target, ids.shape[1], max_new_tokens, block_size)
    _set_graphs(target, graphs, cache, bs, draft, static_capacity(ids.shape[1], max_new_tokens, bs))
    return (yield from within(spec_steps(
        sys.modules[__name__], draft, target, ids, max_new_tokens=max_new_tokens,
        stops={int(s) for s in stop_token_ids}, sampling=sampling, block_size=bs,
        rng=new_rng(sampling.seed, target.device), clock=_clock(target.device, timed), prefill_step=prefill_step,
        static=cache == "static",
    ), lambda: _step_context(policy), policy.label, cache + "+graphs" if graphs else None))


spec_generate = spec_generate_of(stream_generate)


@torch.inference_mode()
def greedy_generate(target: TorchTarget, input_ids: Tokens, *, max_new_tokens: int, stop_token_ids: Sequence[int] = (),
                    prefill_step: Optional[int] = None, timed: bool = True, attention: str = "auto",
                    cache: str = "dynamic", graphs: bool = False) -> GenerationResult:
    """Plain greedy decoding of the target alone, one token per forward: the lossless reference
    and the speed baseline. Same result shape as spec_generate (block size 1, tau 1); `attention`,
    `cache` and `graphs` (here: the one-token forward) as for stream_generate."""
    policy = run_policy(target, attention, cache)
    ids = _as_ids(input_ids, target)
    check_length(target, ids.shape[1], max_new_tokens)
    _set_graphs(target, graphs, cache, 1)
    with attention_context(policy):
        result = greedy_steps(sys.modules[__name__], target, ids, max_new_tokens=max_new_tokens,
                              stops={int(s) for s in stop_token_ids}, clock=_clock(target.device, timed),
                              prefill_step=prefill_step, static=cache == "static")
    result.stats.attention = policy.label
    if graphs:
        result.stats.cache = cache + "+graphs"
    return result


@torch.inference_mode()
def generate_baseline(target: TorchTarget, input_ids: Tokens, *, max_new_tokens: int,
                      stop_token_ids: Sequence[int] = (), attention: str = "auto",
                      cache: str = "dynamic") -> Optional[GenerationResult]:
    """The target decoded as its users decode it: transformers' own greedy `generate()` (do_sample
    False, the same stop tokens, `cache_implementation="static"` for a static cache), in the same
    attention context. Its decode time is the full call's less a one-token call's (the prefill), so
    the rate compares with greedy_generate's. None where the model has no generate()."""
    generate = getattr(target.model, "generate", None)
    if generate is None:
        return None
    policy = run_policy(target, attention, cache)
    ids = _as_ids(input_ids, target)
    check_length(target, ids.shape[1], max_new_tokens)
    kwargs: dict = {"do_sample": False, "eos_token_id": list(stop_token_ids) or None,
                    "pad_token_id": (list(stop_token_ids) or [0])[0], "attention_mask": torch.ones_like(ids)}
    if cache == "static":
        kwargs["cache_implementation"] = "static"
    clock = _clock(target.device, True)
    import transformers

    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # its generation-config notes are not ours to print
    try:
        with attention_context(policy):
            t0 = clock()
            generate(ids, max_new_tokens=1, min_new_tokens=1, **kwargs)
            t1 = clock()
            out = generate(ids, max_new_tokens=max_new_tokens, **kwargs)
            t2 = clock()
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    tokens = out[0, ids.shape[1]:].tolist()
    stops = {int(s) for s in stop_token_ids}
    if stops:  # generate pads after a stop token; the output ends at the first one, as ours does
        cut = next((i for i, t in enumerate(tokens) if t in stops), None)
        tokens = tokens if cut is None else tokens[: cut + 1]
    stats = GenerationStats(block_size=1, num_prompt_tokens=ids.shape[1], num_new_tokens=len(tokens), cache=cache,
                            attention=policy.label)
    stats.acceptance_lengths = [1] * max(len(tokens) - 1, 0)
    stats.prefill_s, stats.decode_s = t1 - t0, max(t2 - t1 - (t1 - t0), 0.0)
    return GenerationResult(tokens, stats)


def _top2(logits: torch.Tensor, spec_token: int, baseline_token: int) -> dict:
    """logits [V] (float32) -> the top-1 / top-2 tokens and logits, and the two tokens' logits."""
    values, ids = torch.topk(logits, min(2, logits.shape[-1]))
    v, i = values.tolist(), ids.tolist()
    return {"top1": i[0], "top1_logit": v[0], "top2": i[-1], "top2_logit": v[-1], "margin": v[0] - v[-1],
            "spec_logit": float(logits[spec_token]), "baseline_logit": float(logits[baseline_token])}


@torch.inference_mode()
def divergence_margins(draft: DFlashDraftModel, target: TorchTarget, prompt: Sequence[int], output: Sequence[int],
                       index: int, stats: GenerationStats, spec_token: int, baseline_token: int,
                       attention: str = "auto") -> dict:
    """The target's logits at output position `index` (where speculative and greedy output first
    differ), measured again two ways from a fresh prefill: in a verify block shaped as the speculative
    run's (the block of that step: its committed tokens, padded with the draft's mask token to the
    step's size) and in a one-token forward after a prefill of everything before (greedy decoding's
    last step). -> {"block": {...}, "single": {...}} (see _top2)."""
    policy = run_policy(target, attention)
    device = target.device
    context = [int(t) for t in prompt] + [int(t) for t in output[:index]]  # every token before the one in question
    n_prompt = len(prompt)

    def ids_of(tokens: Sequence[int]) -> torch.Tensor:
        return torch.tensor([list(tokens)], dtype=torch.long, device=device)

    def last_logits(prefix: Sequence[int], tail: Sequence[int], row: int) -> torch.Tensor:
        cache = target.new_cache()
        if prefix:
            target.forward(ids_of(prefix), cache, 0, logits_to_keep=1)
        out = target.forward(ids_of(tail), cache, len(prefix))
        return out.logits[0, row].float()

    with attention_context(policy):
        begin, size = step_of(index, stats.acceptance_lengths, stats.drafted)
        if index == 0:  # the prefill's own token: both runs computed it the same way
            block = single = last_logits([], context, len(context) - 1)
        else:
            # the step's block starts at the last token committed before it: output[begin-1]
            first = n_prompt + begin - 1
            known = context[first:]  # block tokens up to the one predicting `index`
            pad = [int(draft.mask_token_id)] * max(size - len(known), 0)
            block = last_logits(context[:first], known + pad, len(known) - 1)
            single = last_logits(context[:-1], context[-1:], 0)
    return {"block": _top2(block, spec_token, baseline_token), "single": _top2(single, spec_token, baseline_token)}
