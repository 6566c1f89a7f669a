"""Generation results and acceptance statistics, shared by the PyTorch and MLX runtimes (pure Python)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

__all__ = ["GenerationStats", "GenerationResult", "histogram", "mean_acceptance", "per_position_acceptance"]


def mean_acceptance(acceptance_lengths: Sequence[int]) -> float:
    """tau: mean tokens committed per target forward (0.0 when there was no decode step)."""
    return sum(acceptance_lengths) / len(acceptance_lengths) if acceptance_lengths else 0.0


def histogram(acceptance_lengths: Sequence[int], block_size: int) -> dict[int, int]:
    """How many decode steps committed 1, 2, ..., block_size tokens (every key present)."""
    counts = {k: 0 for k in range(1, max(block_size, 1) + 1)}
    for n in acceptance_lengths:
        counts[n] = counts.get(n, 0) + 1
    return counts


def per_position_acceptance(accepted: Sequence[int], drafted: Sequence[int], block_size: int) -> list[float]:
    """For draft position k = 1 .. block_size-1: the fraction of steps that drafted position k in
    which the draft token at k was accepted (so the list is non-increasing). NaN-free: a position
    never drafted gets 0.0."""
    rates = []
    for k in range(1, block_size):
        steps = [a for a, d in zip(accepted, drafted) if d >= k]
        rates.append(sum(1 for a in steps if a >= k) / len(steps) if steps else 0.0)
    return rates


@dataclass
class GenerationStats:
    """What one generate call measured. One entry per decode step (target forward) in the lists."""

    block_size: int
    num_prompt_tokens: int
    num_new_tokens: int = 0
    # tokens committed per step: accepted draft tokens + the target's own next token, cut short
    # on the last step by a stop token or max_new_tokens (the reference runtime's accounting)
    acceptance_lengths: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)  # draft tokens accepted per step (uncut)
    drafted: list[int] = field(default_factory=list)  # draft tokens proposed per step
    prefill_s: float = 0.0  # prompt forward + first token
    decode_s: float = 0.0  # every later token
    # how the forwards ran: the attention policy's label (runtime/torch_attention.py; "" when the
    # runtime has no choice) and the cache kind ("dynamic" | "static")
    attention: str = ""
    cache: str = "dynamic"

    @property
    def tau(self) -> float:
        return mean_acceptance(self.acceptance_lengths)

    @property
    def histogram(self) -> dict[int, int]:
        return histogram(self.acceptance_lengths, self.block_size)

    @property
    def per_position_acceptance(self) -> list[float]:
        return per_position_acceptance(self.accepted, self.drafted, self.block_size)

    @property
    def decode_tokens(self) -> int:
        """Tokens produced by the decode loop (all but the first, which the prefill produces)."""
        return sum(self.acceptance_lengths)

    @property
    def decode_tokens_per_s(self) -> float:
        return self.decode_tokens / self.decode_s if self.decode_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "block_size": self.block_size,
            "num_prompt_tokens": self.num_prompt_tokens,
            "num_new_tokens": self.num_new_tokens,
            "acceptance_lengths": list(self.acceptance_lengths),
            "accepted": list(self.accepted),
            "drafted": list(self.drafted),
            "tau": self.tau,
            "histogram": {str(k): v for k, v in self.histogram.items()},
            "per_position_acceptance": self.per_position_acceptance,
            "prefill_s": self.prefill_s,
            "decode_s": self.decode_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "attention": self.attention,
            "cache": self.cache,
        }


@dataclass
class GenerationResult:
    """Generated token ids (the prompt excluded) and the stats of the call."""

    tokens: list[int]
    stats: GenerationStats
