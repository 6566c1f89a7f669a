"""What both runtimes do the same way, written once: input checks, the decode loops, the stop-token
cut and the stats bookkeeping. Pure Python, no framework.

The loops take the runtime module they run for (`rt`: torch_generate or mlx_generate) and call its
framework steps by name -- prefill, draft_block, verify_block, accept_greedy, accept_sampling,
sampling_probs, pick, token_block, join_block -- so the two runtimes share one loop and differ only
in those steps:

    prefill -> loop { draft_block -> verify_block -> accept_greedy | accept_sampling -> rollback }
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Generator, Iterable, Optional, Sequence

from dflash_compat.exceptions import InputError, RuntimeUnsupportedError
from dflash_compat.runtime.stats import GenerationResult, GenerationStats

__all__ = [
    "Sampling",
    "GREEDY",
    "StreamStep",
    "MIN_TEMPERATURE",
    "MAX_SEED",
    "INITIAL_DRAFT_CAPACITY",
    "check_pairing",
    "check_length",
    "check_block_size",
    "check_token_ids",
    "check_spec_run",
    "eos_ids",
    "accept_prefix",
    "cut_at_stop",
    "finish_reason",
    "draft_capacity",
    "static_capacity",
    "spec_steps",
    "greedy_steps",
    "within",
    "collect",
    "spec_generate_of",
    "ATTENTION_CHOICES",
    "CACHE_KINDS",
    "TIE_ULPS",
    "dtype_step",
    "step_of",
    "classify_divergence",
    "VERDICTS",
    "first_difference",
    "verdict_of",
]

# --attention: which SDPA kernels the torch runtime lets torch pick from (runtime/torch_attention.py)
ATTENTION_CHOICES = ("auto", "flash", "efficient", "math", "cudnn")
# --cache: "dynamic" grows with the run; "static" is allocated once for prompt + max new tokens + one
# block, so every verify and draft forward attends over keys of one length
CACHE_KINDS = ("dynamic", "static")
# A greedy difference is a near-tie when, in both the block forward and the one-token forward, the two
# tokens' logits are within this many rounding steps of the run's dtype (at the logits' magnitude).
TIE_ULPS = 4
# mantissa bits of the dtypes a run can use (float32's when unknown)
_MANTISSA_BITS = {"float32": 23, "float64": 52, "bfloat16": 7, "float16": 10}
VERDICTS = ("lossless", "near-tie", "differs")

# Below this a temperature is greedy in effect, and logits / T overflows float32 (1e-300 gave NaNs).
MIN_TEMPERATURE = 1e-4
MAX_SEED = 2**63 - 1  # torch.Generator and mx.random.key both take it
# the draft cache's first allocation holds the prompt and at most this many new positions (it grows after)
INITIAL_DRAFT_CAPACITY = 4096


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: temperature 0 is greedy (exact, checked token for token);
    above 0, a sample from softmax(logits / temperature) restricted to the top_k tokens (0: all)
    and to the smallest set of mass top_p. `seed` makes a sampled run reproducible (None: the
    framework's global generator)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: Optional[int] = None

    def __post_init__(self) -> None:
        t, p = self.temperature, self.top_p
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not (t == 0 or MIN_TEMPERATURE <= t < math.inf):
            raise InputError(f"temperature {t!r}: expected 0 (greedy) or a number from {MIN_TEMPERATURE} up")
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 < p <= 1:
            raise InputError(f"top_p {p!r}: expected a number in (0, 1]")
        if not _is_int(self.top_k) or self.top_k < 0:
            raise InputError(f"top_k {self.top_k!r}: expected a whole number >= 0 (0: no limit)")
        if self.seed is not None and (not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED):
            raise InputError(f"seed {self.seed!r}: expected a whole number from 0 to 2**63-1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


GREEDY = Sampling()


@dataclass
class StreamStep:
    """One step of `stream_generate`: the tokens it committed (the first step: the prefill's token)."""

    tokens: list[int]
    accepted: int  # draft tokens accepted (0 on the prefill step)
    drafted: int  # draft tokens proposed (0 on the prefill step)
    stats: GenerationStats  # the running stats; final once the stream is exhausted
    finish_reason: Optional[str] = None  # "stop" | "length" on the last step


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------


def check_pairing(draft: Any, target: Any) -> None:
    """The facts the runtime relies on; a mismatch would crash mid-run or decode garbage.
    `draft` is either runtime's draft model (it has `.cfg`), `target` a runtime Target."""
    cfg = draft.cfg
    if cfg.hidden_size != target.hidden_size:
        raise RuntimeUnsupportedError(f"draft hidden_size {cfg.hidden_size} != target hidden_size {target.hidden_size}")
    bad = [i for i in cfg.target_layer_ids if not 0 <= i < target.num_layers]
    if bad:
        raise RuntimeUnsupportedError(
            f"draft target_layer_ids {bad[:8]} are out of range for a target with {target.num_layers} layers"
        )
    if not 0 <= cfg.mask_token_id < target.vocab_size:
        raise RuntimeUnsupportedError(
            f"draft mask_token_id {cfg.mask_token_id} is not a row of the target's embedding ({target.vocab_size} rows)"
        )
    if cfg.version == 2 and cfg.vocab_size is not None and cfg.vocab_size < target.vocab_size:
        raise RuntimeUnsupportedError(
            f"DFlash 2 draft vocab_size {cfg.vocab_size} < target vocabulary {target.vocab_size}")


def check_length(target: Any, n_prompt: int, max_new_tokens: int) -> None:
    """Refuse a run longer than the target's context (`max_positions` of the target, when known)."""
    if not _is_int(max_new_tokens):
        raise InputError(f"max_new_tokens {max_new_tokens!r}: expected a whole number")
    limit = getattr(target, "max_positions", None)
    if limit is not None and n_prompt + max_new_tokens > limit:
        raise InputError(
            f"prompt length {n_prompt} + max_new_tokens {max_new_tokens} exceeds the target's "
            f"max_position_embeddings {limit}"
        )


def check_block_size(block_size: Optional[int], draft_block_size: int, label: str = "block size") -> int:
    """The block size a run uses: the draft's own, or a smaller one (never above what it was trained for)."""
    bs = draft_block_size if block_size is None else block_size
    if not _is_int(bs) or not 1 <= bs <= draft_block_size:
        raise InputError(f"{label} {bs} must be between 1 and the draft's block_size {draft_block_size}")
    return bs


def check_token_ids(ids: Iterable[Any], vocab_size: int, label: str = "input_ids") -> None:
    """Every id a row of the target's embedding (a wrong id would index out of range, or wrap)."""
    bad = next((t for t in ids if not 0 <= t < vocab_size), None)
    if bad is not None:
        raise InputError(f"{label}: token id {bad} is outside the target's vocabulary (0..{vocab_size - 1})")


def check_spec_run(draft: Any, target: Any, n_prompt: int, max_new_tokens: int, block_size: Optional[int]) -> int:
    """Everything a speculative run checks before its first forward; returns the block size."""
    target.require_rollback()
    check_pairing(draft, target)
    bs = check_block_size(block_size, draft.block_size)
    check_length(target, n_prompt, max_new_tokens)
    return bs


def eos_ids(eos: Any) -> list[int]:
    """A config's eos_token_id (one id or a list) as a list of ids; values that are no ids are left out."""
    values = eos if isinstance(eos, (list, tuple)) else [eos]
    return [int(e) for e in values if _is_int(e)]


# ---------------------------------------------------------------------------------------------
# the pieces of a step
# ---------------------------------------------------------------------------------------------


def accept_prefix(proposed: Sequence[int], target_says: Sequence[int]) -> tuple[int, list[int]]:
    """Greedy acceptance on plain ids: proposed [g] draft tokens, target_says [g+1] the target's
    argmax after each prefix. Draft tokens are accepted while they equal it; the target's token
    after the last accepted one is the bonus. -> (accepted, new tokens)."""
    n = 0
    while n < len(proposed) and proposed[n] == target_says[n]:
        n += 1
    return n, list(target_says[: n + 1])


def cut_at_stop(new: list[int], room: int, stops: set[int]) -> list[int]:
    """At most `room` tokens, ending at the first stop token (kept)."""
    new = new[:room]
    for i, t in enumerate(new):
        if t in stops:
            return new[: i + 1]
    return new


def finish_reason(tokens: list[int], max_new_tokens: int, stops: set[int]) -> Optional[str]:
    if tokens and tokens[-1] in stops:
        return "stop"
    return "length" if len(tokens) >= max_new_tokens else None


def draft_capacity(n_prompt: int, max_new_tokens: int, block_size: int) -> int:
    """Positions the draft cache allocates up front: the prompt, the new tokens up to a cap (it grows
    after), and one block -- never more block than the run can use (a block_size of 10**9 in a
    config must not allocate 10**9 positions)."""
    return n_prompt + min(max_new_tokens, INITIAL_DRAFT_CAPACITY) + min(block_size, max_new_tokens + 1)


def static_capacity(n_prompt: int, max_new_tokens: int, block_size: int) -> int:
    """Positions a static cache holds: the prompt, every new token and one block (the verify block
    written past the committed tokens)."""
    return n_prompt + max_new_tokens + block_size


def _record(stats: GenerationStats, new: list[int], accepted: int, drafted: int, total: int) -> None:
    stats.acceptance_lengths.append(len(new))
    stats.accepted.append(accepted)
    stats.drafted.append(drafted)
    stats.num_new_tokens = total


# ---------------------------------------------------------------------------------------------
# the loops
# ---------------------------------------------------------------------------------------------


def spec_steps(rt: Any, draft: Any, target: Any, ids: Any, *, max_new_tokens: int, stops: set[int],
               sampling: Sampling, block_size: int, rng: Any, clock: Callable[[], float],
               prefill_step: Optional[int], static: bool = False) -> Generator[StreamStep, None, GenerationStats]:
    """DFlash speculative decoding of one checked prompt ids [1, n], step by step; returns the final stats.
    `static`: target and draft caches allocated once for the whole run (static_capacity), so every
    verify and draft forward attends over keys of one length; rejected positions are masked and
    overwritten by the next step."""
    n_prompt = ids.shape[1]
    stats = GenerationStats(block_size=block_size, num_prompt_tokens=n_prompt, cache="static" if static else "dynamic")
    if max_new_tokens <= 0:
        return stats
    capture = draft.target_layer_ids if block_size > 1 else ()
    t0 = clock()
    capacity = static_capacity(n_prompt, max_new_tokens, block_size)
    cache = target.new_cache(static_length=capacity) if static else target.new_cache()
    out = rt.prefill(target, ids, cache, capture, prefill_step)
    target.rollback(cache, n_prompt)  # trims sliding-window layers back to their window (where it is not a no-op)
    tokens = [rt.pick(out.logits[0, -1], sampling, rng)]
    features = out.features  # [1, n, L*H]: context not yet in the draft cache
    draft_cache = draft.new_cache(capacity=capacity, static=True) if static else \
        draft.new_cache(capacity=draft_capacity(n_prompt, max_new_tokens, block_size))
    t1 = clock()
    stats.num_new_tokens, stats.prefill_s = 1, t1 - t0
    yield StreamStep([tokens[0]], 0, 0, stats, finish_reason(tokens, max_new_tokens, stops))

    start = n_prompt  # position of the last committed token (not yet in the target cache)
    while finish_reason(tokens, max_new_tokens, stops) is None:
        size = min(block_size, max_new_tokens - len(tokens) + 1)
        last = rt.token_block(tokens[-1], ids)  # [1, 1]
        if size > 1:
            proposed, q = rt.draft_block(draft, target, last, features, start, draft_cache, size, sampling, rng)
            block = rt.join_block(last, proposed)  # [1, size]
        else:
            block = last
        out = rt.verify_block(target, block, cache, start, capture if size > 1 else ())
        if size == 1:
            n_acc, new = 0, [rt.pick(out.logits[0, -1], sampling, rng)]
        elif not sampling.greedy:
            n_acc, new = rt.accept_sampling(proposed, q, rt.sampling_probs(out.logits, sampling), rng)
        else:
            n_acc, new = rt.accept_greedy(proposed, out.logits)
        new = cut_at_stop(new, max_new_tokens - len(tokens), stops)
        tokens += new
        _record(stats, new, n_acc, size - 1, len(tokens))
        start += len(new)
        target.rollback(cache, start)  # drop the rejected block positions
        if size > 1:
            features = out.features[:, : len(new)]  # accepted positions + the bonus position's input
        stats.decode_s = clock() - t1
        yield StreamStep(new, n_acc, size - 1, stats, finish_reason(tokens, max_new_tokens, stops))
    return stats


def within(steps: Generator[StreamStep, None, GenerationStats], context: Callable[[], Any],
           attention: str, cache: Optional[str] = None) -> Generator[StreamStep, None, GenerationStats]:
    """A stream whose every step is computed inside `context()` (the torch runtime's attention kernels
    and inference mode), never across a yield: the caller's code between steps runs under its own
    settings. Each step's stats carry the attention label (and `cache`, when given, as the cache kind)."""
    while True:
        with context():
            try:
                step = next(steps)
            except StopIteration as done:
                _label(done.value, attention, cache)
                return done.value
        _label(step.stats, attention, cache)
        yield step


def _label(stats: GenerationStats, attention: str, cache: Optional[str]) -> None:
    stats.attention = attention
    if cache is not None:
        stats.cache = cache


def greedy_steps(rt: Any, target: Any, ids: Any, *, max_new_tokens: int, stops: set[int],
                 clock: Callable[[], float], prefill_step: Optional[int], static: bool = False) -> GenerationResult:
    """Plain greedy decoding of the target alone, one token per forward, on checked prompt ids [1, n].
    Its cache never rolls back, so any cache the target runs with will do (`static`: one allocated
    for prompt + max_new_tokens, as transformers' cache_implementation="static")."""
    n_prompt = ids.shape[1]
    stats = GenerationStats(block_size=1, num_prompt_tokens=n_prompt, cache="static" if static else "dynamic")
    if max_new_tokens <= 0:
        return GenerationResult([], stats)
    t0 = clock()
    cache = target.new_plain_cache(static_length=n_prompt + max_new_tokens) if static else target.new_plain_cache()
    out = rt.prefill(target, ids, cache, (), prefill_step)
    tokens = [rt.pick(out.logits[0, -1], GREEDY, None)]
    t1 = clock()
    start = n_prompt
    while finish_reason(tokens, max_new_tokens, stops) is None:
        out = target.forward(rt.token_block(tokens[-1], ids), cache, start, logits_to_keep=1)
        tokens.append(rt.pick(out.logits[0, -1], GREEDY, None))
        start += 1
        _record(stats, tokens[-1:], 0, 0, len(tokens))
    stats.num_new_tokens = len(tokens)
    stats.prefill_s, stats.decode_s = t1 - t0, clock() - t1
    return GenerationResult(tokens, stats)


def spec_generate_of(stream_generate: Callable[..., Generator[StreamStep, None, GenerationStats]]):
    """A runtime's spec_generate: its stream_generate, collected -- the same parameters, one result."""

    @functools.wraps(stream_generate)
    def spec_generate(*args: Any, **kwargs: Any) -> GenerationResult:
        return collect(stream_generate(*args, **kwargs))

    spec_generate.__name__ = spec_generate.__qualname__ = "spec_generate"
    spec_generate.__doc__ = (
        "DFlash speculative decoding of one prompt (stream_generate, collected): the generated ids (prompt "
        "excluded; the last is a stop token if one was produced) and GenerationStats."
    )
    spec_generate.__signature__ = inspect.signature(stream_generate).replace(return_annotation=GenerationResult)
    del spec_generate.__wrapped__  # the signature above is the one to show
    return spec_generate


def collect(steps: Generator[StreamStep, None, GenerationStats]) -> GenerationResult:
    """A stream's tokens and its final stats (the generator's return value)."""
    tokens: list[int] = []
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            return GenerationResult(tokens, done.value)
        tokens += step.tokens


# ---------------------------------------------------------------------------------------------
# the tie-aware verdict (pure Python; the margins come from the runtime's divergence_margins)
# ---------------------------------------------------------------------------------------------


def dtype_step(dtype: str, magnitude: float) -> float:
    """One rounding step (unit in the last place) of `dtype` at a value of this magnitude: bfloat16
    keeps 7 mantissa bits, so at 4.6 a step is 2**(2-7) = 0.03125; float32 keeps 23 (4.8e-7 there)."""
    bits = _MANTISSA_BITS.get(dtype, 23)
    m = max(abs(float(magnitude)), 2.0 ** -14)
    return 2.0 ** (math.floor(math.log2(m)) - bits)


def step_of(index: int, acceptance_lengths: Sequence[int], drafted: Sequence[int]) -> tuple[int, int]:
    """Which verify block produced output token `index` of a speculative run: (the output index of the
    block's first prediction, the block's size). Token 0 comes from the prefill: (0, 0)."""
    if index <= 0:
        return 0, 0
    begin = 1
    for committed, proposed in zip(acceptance_lengths, drafted):
        if index < begin + committed:
            return begin, proposed + 1
        begin += committed
    raise ValueError(f"output token {index} is past the run's {begin} tokens")


def classify_divergence(index: int, spec_token: Optional[int], baseline_token: Optional[int],
                        margins: Optional[dict[str, Any]], dtype: str) -> dict[str, Any]:
    """The verdict on the first token where speculative and greedy output differ.

    `margins`: per forward ("block": the verify block's forward, "single": the one-token forward), the
    target's top-1 / top-2 tokens and logits and the logits of the two tokens in question, measured
    again from a fresh prefill (the runtime's divergence_margins). "near-tie" when in both forwards
    the two tokens' logits are within TIE_ULPS rounding steps of `dtype` (rounding can flip them);
    else "differs": a real difference, a bug."""
    out: dict[str, Any] = {"index": index, "spec_token": spec_token, "baseline_token": baseline_token,
                           "dtype": dtype, "verdict": "differs", "tolerance": None}
    if margins is None or spec_token is None or baseline_token is None:
        out["reason"] = "one output stops where the other goes on"
        return out
    out.update({k: margins[k] for k in ("block", "single")})
    gaps, tolerances = [], []
    for forward in (margins["block"], margins["single"]):
        a, b = forward["spec_logit"], forward["baseline_logit"]
        gaps.append(abs(a - b))
        tolerances.append(TIE_ULPS * dtype_step(dtype, max(abs(a), abs(b))))
    tolerance = max(tolerances)
    out["gap"] = max(gaps)
    out["tolerance"] = tolerance
    if not all(math.isfinite(g) for g in gaps):
        out["reason"] = "a logit is not finite"
    elif max(gaps) <= tolerance:
        out["verdict"] = "near-tie"
        out["reason"] = (f"the two tokens' logits are {max(gaps):.4g} apart, within {TIE_ULPS} rounding steps "
                         f"of {dtype} ({tolerance:.4g})")
    else:
        out["reason"] = (f"the target prefers one token by {max(gaps):.4g}, more than {dtype}'s rounding "
                         f"({tolerance:.4g}): the speculative output is wrong")
    return out


def first_difference(a: Sequence[int], b: Sequence[int]) -> Optional[int]:
    """Index of the first token where two outputs differ (None when identical)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def verdict_of(spec: Sequence[int], baseline: Sequence[int], divergence: Optional[dict[str, Any]]) -> str:
    """'lossless' (token-identical), else the divergence's verdict ('differs' when none was measured)."""
    if list(spec) == list(baseline):
        return "lossless"
    return divergence["verdict"] if divergence else "differs"
