"""DFlash speculative decoding in PyTorch (batch size 1), and a plain greedy baseline.

prefill -> loop { draft_block -> verify_block -> accept_greedy | accept_sampling -> rollback }.
The target is reached only through a TargetAdapter (dflash_compat.adapters). Mirrored function for
function by `mlx_generate.py`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Sequence, Union

import torch

from ..adapters import TargetAdapter, TargetOutput, torch_adapter_for
from ..exceptions import ConfigError, InputError, RemoteCodeError, RuntimeUnsupportedError, WeightsError
from .draft_config import INITIAL_DRAFT_CAPACITY, check_length as _check_length, check_pairing
from .stats import GenerationResult, GenerationStats
from .torch_draft import DFlash2DraftModel, DFlashDraftModel, load_draft

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
    "spec_generate",
    "greedy_generate",
    "stop_tokens_of",
]

Tokens = Union[Sequence[int], torch.Tensor]


# ---------------------------------------------------------------------------------------------
# loading and checks
# ---------------------------------------------------------------------------------------------


def load_target(
    ref: Union[str, Path],
    *,
    device: Union[str, torch.device] = "cpu",
    dtype: torch.dtype = torch.float32,
    trust_remote_code: bool = False,
    token: Optional[str] = None,
    adapter: Optional[str] = None,
) -> TargetAdapter:
    """Load a transformers target (folder or Hub id; safetensors only) and wrap it in its adapter
    (`adapter`: a shim file or built-in adapter name; default: chosen by model_type)."""
    import transformers
    from transformers import AutoModelForCausalLM

    from ..resolve import download_weights, resolve

    resolved = resolve(str(ref), "target", token=token)
    folder = download_weights(resolved, token=token, trust_remote_code=trust_remote_code)
    if not list(folder.glob("*.safetensors")):
        raise WeightsError(f"target {ref}: no *.safetensors files (pickled .bin weights are never loaded)")
    major_minor = tuple(int(p) for p in transformers.__version__.split(".")[:2])
    kwargs = {"dtype" if major_minor >= (4, 56) else "torch_dtype": dtype,
              "use_safetensors": True, "trust_remote_code": trust_remote_code}
    loaders = [AutoModelForCausalLM]
    try:
        from transformers import AutoModelForImageTextToText  # VLM wrappers

        loaders.append(AutoModelForImageTextToText)
    except ImportError:  # pragma: no cover - old transformers
        pass
    from safetensors import SafetensorError

    try:
        from huggingface_hub.errors import StrictDataclassError  # transformers 5's config validation
    except ImportError:  # pragma: no cover - older huggingface_hub
        StrictDataclassError = ConfigError  # never raised by transformers there
    model, info, errors = None, None, []
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # our one-line error replaces its load report
    try:
        for loader in loaders:
            try:
                model, info = loader.from_pretrained(str(folder), output_loading_info=True, **kwargs)
                break
            except ValueError as exc:
                text = str(exc)
                if "trust_remote_code" in text and not trust_remote_code:
                    raise RemoteCodeError(
                        f"target {ref}: the model needs its repository's own code; pass --trust-remote-code if you trust it"
                    ) from None
                errors.append(text.splitlines()[0] if text else type(exc).__name__)
            except StrictDataclassError as exc:
                text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
                raise ConfigError(f"target {ref}: transformers refuses its config.json ({text})") from None
            except (OSError, SafetensorError) as exc:  # unreadable / truncated files
                text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise WeightsError(f"target {ref}: cannot load its weights ({text})") from None
            except RuntimeError as exc:
                if "mismatch" not in str(exc):
                    raise
                raise WeightsError(
                    f"target {ref}: checkpoint tensors have other shapes than its config.json implies "
                    "(size mismatch); the weights do not belong to this config"
                ) from None
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    if model is None:
        raise RuntimeUnsupportedError(f"target {ref}: transformers cannot load it as a causal LM ({'; '.join(errors)})")
    _check_loading_info(ref, info)
    return torch_adapter_for(model.to(device).eval(), adapter)


def _check_loading_info(ref, info) -> None:
    """Missing or mismatched target weights would be filled with random values: refuse them.
    transformers has already dropped the keys it expects to be absent (tied heads, ignore lists)."""
    info = info or {}
    missing = sorted(str(k) for k in info.get("missing_keys") or ())
    mismatched = sorted(str(k[0] if isinstance(k, (tuple, list)) else k) for k in info.get("mismatched_keys") or ())
    problems = info.get("error_msgs") or []
    parts = []
    for label, keys in (("missing", missing), ("mismatched", mismatched)):
        if keys:
            parts.append(f"{label} {', '.join(keys[:5])}{f' (+{len(keys) - 5} more)' if len(keys) > 5 else ''}")
    if problems:
        parts.append(str(problems[0]).splitlines()[0])
    if parts:
        raise WeightsError(f"target {ref}: the checkpoint does not hold every weight its config.json needs "
                           f"({'; '.join(parts)}); transformers would fill them with random values")


def stop_tokens_of(adapter: TargetAdapter) -> list[int]:
    """The target's EOS token ids (generation_config first, then config)."""
    model = adapter.model
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is not None:
            return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]
    return []


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


def sampling_probs(logits: torch.Tensor, temperature: float, top_p: float = 1.0, top_k: int = 0) -> torch.Tensor:
    """The distribution a sampler draws from: softmax(logits / T) restricted to the top-k tokens
    and to the smallest set whose mass reaches top_p, renormalised. [..., V] -> float32 [..., V]."""
    scores = logits.float() / temperature
    if 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1:]  # [..., 1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # keep a token while the mass strictly before it is < top_p (the first token always stays)
        sorted_probs = sorted_probs * ((sorted_probs.cumsum(-1) - sorted_probs) < top_p)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def _sample(probs: torch.Tensor, generator: Optional[torch.Generator]) -> torch.Tensor:
    # [..., V] -> [...]
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


def _pick(logits: torch.Tensor, temperature: float, top_p: float, top_k: int,
          generator: Optional[torch.Generator]) -> torch.Tensor:
    """The target's own next token from logits [..., V]: argmax, or a sample."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    return _sample(sampling_probs(logits, temperature, top_p, top_k), generator)


# ---------------------------------------------------------------------------------------------
# the steps
# ---------------------------------------------------------------------------------------------


def prefill(target: TargetAdapter, input_ids: torch.Tensor, cache, capture: Sequence[int]) -> TargetOutput:
    """Run the prompt [1, n]; -> logits of the last position [1, 1, V] and features [1, n, L*H]."""
    out = target.forward(input_ids, cache, 0, capture=capture, logits_to_keep=1)
    target.rollback(cache, input_ids.shape[1])  # trims sliding-window layers back to their window
    return out


def draft_block(
    draft: DFlashDraftModel,
    target: TargetAdapter,
    last: torch.Tensor,
    features: torch.Tensor,
    start: int,
    cache,
    size: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    generator: Optional[torch.Generator] = None,
) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Propose size-1 tokens after `last` [1, 1] (at position `start`) in one draft forward.

    features [1, C, L*H]: target features of positions start-C .. start-1 not yet in the draft cache.
    -> tokens [1, size-1], and with temperature > 0 their proposal distributions [1, size-1, V].
    """
    mask = torch.full((1, size - 1), draft.mask_token_id, dtype=last.dtype, device=last.device)
    block = torch.cat([last, mask], dim=1)  # [1, size]: the last committed token, then masks
    noise = target.embed(block)  # [1, size, H]
    if draft.cfg.input_embedding_scale != 1.0:
        noise = noise * draft.cfg.input_embedding_scale
    hidden = draft(noise, features, start, cache)[:, 1:]  # [1, size-1, H]: predictions for positions 1..
    logits = draft.compute_logits(hidden, target.head)  # [1, size-1, V]
    if isinstance(draft, DFlash2DraftModel):
        return draft.candidate_selector.select(hidden, logits, last[:, 0], temperature, generator)
    if temperature <= 0:
        return logits.argmax(dim=-1), None
    probs = sampling_probs(logits, temperature, top_p, top_k)
    return _sample(probs, generator), probs


def verify_block(target: TargetAdapter, block: torch.Tensor, cache, start: int, capture: Sequence[int]) -> TargetOutput:
    """Target forward on block [1, size] at positions start ..; logits [1, size, V], features [1, size, L*H]."""
    return target.forward(block, cache, start, capture=capture)


def accept_greedy(draft_tokens: torch.Tensor, logits: torch.Tensor) -> tuple[int, list[int]]:
    """draft_tokens [1, g], target logits [1, g+1, V] -> (accepted draft tokens, new tokens).

    The target's argmax after each prefix of the block; draft tokens are accepted while they equal
    it, and the target's token after the last accepted one is the bonus. Exact: the new tokens are
    what greedy decoding of the target alone would produce.
    """
    posterior = logits[0].argmax(dim=-1)  # [g+1]
    both = torch.cat([posterior, draft_tokens[0]]).tolist()  # one device sync
    g = draft_tokens.shape[1]
    target_says, proposed = both[: g + 1], both[g + 1:]
    n = 0
    while n < g and proposed[n] == target_says[n]:
        n += 1
    return n, target_says[: n + 1]


def accept_sampling(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: Optional[torch.Generator] = None,
) -> tuple[int, list[int]]:
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
    u = torch.rand(g, generator=generator, device=tok.device)
    accepted = (u * q < p).int().cumprod(0)  # accept with probability min(1, p/q), up to the first rejection
    n = int(accepted.sum())
    if n == g:
        nxt = _sample(target_probs[0, g], generator)
    else:
        residual = (target_probs[0, n] - draft_probs[0, n]).clamp_min(0)  # [V]
        total = residual.sum()
        # p == q everywhere leaves nothing: then p itself is the right distribution
        nxt = _sample(residual / total if total > 0 else target_probs[0, n], generator)
    return n, tok[:n].tolist() + [int(nxt)]


# ---------------------------------------------------------------------------------------------
# the loops
# ---------------------------------------------------------------------------------------------


def _cut(new: list[int], room: int, stops: set[int]) -> list[int]:
    """At most `room` tokens, ending at the first stop token (kept)."""
    new = new[:room]
    for i, t in enumerate(new):
        if t in stops:
            return new[: i + 1]
    return new


def _now(device: torch.device, timed: bool) -> float:
    if timed and device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _as_ids(input_ids: Tokens, device: torch.device, vocab_size: int) -> torch.Tensor:
    try:
        ids = input_ids if isinstance(input_ids, torch.Tensor) else torch.tensor(list(input_ids))
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise InputError("input_ids must be a sequence of integer token ids") from None
    if ids.numel() and (ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool):
        raise InputError("input_ids must be integer token ids")
    ids = ids.to(device=device, dtype=torch.long)
    ids = ids[None] if ids.dim() == 1 else ids
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise InputError("input_ids must be one non-empty prompt (batch size 1)")
    bad = ids[(ids < 0) | (ids >= vocab_size)]
    if bad.numel():
        raise InputError(f"input_ids: token id {int(bad[0])} is outside the target's vocabulary (0..{vocab_size - 1})")
    return ids



def _check_placement(draft: DFlashDraftModel, target: TargetAdapter) -> None:
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


def _validate_sampling(temperature: float, top_p: float, top_k: int) -> None:
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0:
        raise InputError("temperature and top_k must be >= 0, and top_p in (0, 1]")


def _generator(seed: Optional[int], device: torch.device) -> Optional[torch.Generator]:
    return torch.Generator(device=device).manual_seed(seed) if seed is not None else None


@torch.inference_mode()
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
    """DFlash speculative decoding of one prompt. Greedy (temperature 0) output is token-for-token
    the target's greedy output; with temperature > 0 it is distributed as the target's sampling.

    Returns the generated ids (prompt excluded; the last is a stop token if one was produced) and
    GenerationStats. `timed=False` skips the CUDA synchronisations that timing needs.
    """
    _validate_sampling(temperature, top_p, top_k)
    target.require_rollback()
    check_pairing(draft, target)
    _check_placement(draft, target)
    bs = draft.block_size if block_size is None else block_size
    if not 1 <= bs <= draft.block_size:
        raise InputError(f"block size {bs} must be between 1 and the draft's block_size {draft.block_size}")
    device = target.device
    ids = _as_ids(input_ids, device, target.vocab_size)
    n_prompt = ids.shape[1]
    _check_length(target, n_prompt, max_new_tokens)
    stats = GenerationStats(block_size=bs, num_prompt_tokens=n_prompt)
    if max_new_tokens <= 0:
        return GenerationResult([], stats)
    stops = set(int(s) for s in stop_token_ids)
    gen = _generator(seed, device)
    capture = draft.target_layer_ids if bs > 1 else ()

    t0 = _now(device, timed)
    cache = target.new_cache()
    out = prefill(target, ids, cache, capture)
    tokens = [int(_pick(out.logits[0, -1], temperature, top_p, top_k, gen))]
    features = out.features  # [1, n, L*H]: context not yet in the draft cache
    draft_cache = draft.new_cache(capacity=n_prompt + min(max_new_tokens, INITIAL_DRAFT_CAPACITY) + bs)
    t1 = _now(device, timed)

    start = n_prompt  # position of the last committed token (not yet in the target cache)
    while len(tokens) < max_new_tokens and tokens[-1] not in stops:
        size = min(bs, max_new_tokens - len(tokens) + 1)
        last = torch.tensor([[tokens[-1]]], dtype=torch.long, device=device)
        if size > 1:
            proposed, q = draft_block(draft, target, last, features, start, draft_cache, size,
                                      temperature, top_p, top_k, gen)
            block = torch.cat([last, proposed], dim=1)  # [1, size]
        else:
            block = last
        out = verify_block(target, block, cache, start, capture if size > 1 else ())
        if size == 1:
            n_acc, new = 0, [int(_pick(out.logits[0, -1], temperature, top_p, top_k, gen))]
        elif temperature > 0:
            n_acc, new = accept_sampling(proposed, q, sampling_probs(out.logits, temperature, top_p, top_k), gen)
        else:
            n_acc, new = accept_greedy(proposed, out.logits)
        new = _cut(new, max_new_tokens - len(tokens), stops)
        tokens += new
        stats.acceptance_lengths.append(len(new))
        stats.accepted.append(n_acc)
        stats.drafted.append(size - 1)
        start += len(new)
        target.rollback(cache, start)  # drop the rejected block positions
        if size > 1:
            features = out.features[:, : len(new)]  # accepted positions + the bonus position's input

    t2 = _now(device, timed)
    stats.num_new_tokens = len(tokens)
    stats.prefill_s, stats.decode_s = t1 - t0, t2 - t1
    return GenerationResult(tokens, stats)


@torch.inference_mode()
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
    device = target.device
    ids = _as_ids(input_ids, device, target.vocab_size)
    stats = GenerationStats(block_size=1, num_prompt_tokens=ids.shape[1])
    _check_length(target, ids.shape[1], max_new_tokens)
    if max_new_tokens <= 0:
        return GenerationResult([], stats)
    stops = set(int(s) for s in stop_token_ids)

    t0 = _now(device, timed)
    cache = target.new_plain_cache()  # never rolled back: any cache the target runs with will do
    out = target.forward(ids, cache, 0, logits_to_keep=1)
    tokens = [int(out.logits[0, -1].argmax())]
    t1 = _now(device, timed)
    start = ids.shape[1]
    while len(tokens) < max_new_tokens and tokens[-1] not in stops:
        last = torch.tensor([[tokens[-1]]], dtype=torch.long, device=device)
        out = target.forward(last, cache, start, logits_to_keep=1)
        tokens.append(int(out.logits[0, -1].argmax()))
        start += 1
        stats.acceptance_lengths.append(1)
        stats.accepted.append(0)
        stats.drafted.append(0)
    t2 = _now(device, timed)
    stats.num_new_tokens = len(tokens)
    stats.prefill_s, stats.decode_s = t1 - t0, t2 - t1
    return GenerationResult(tokens, stats)
