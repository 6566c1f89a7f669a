"""Which sequences and anchors each step trains on: one seeded draw per step for the whole global batch.

    rows, anchors = step_draw(seed, step, n_sequences, global_batch, loss_mask, anchors)
    rows[rank * per_rank:(rank + 1) * per_rank]      the sequences rank `rank` trains on

The draw depends on (seed, step) and the global batch only, never on the number of ranks or the
framework: every rank draws the same rows and anchors and takes its slice, so N ranks see exactly
the batches one process sees at the same global batch, a resumed run (on any number of ranks) the
batches an uninterrupted one would, and the MLX trainer the PyTorch trainer's. numpy's PCG64 (seeded
through a SeedSequence of [seed mod 2**64, step]) is the generator: the same numbers on every
platform and numpy release that keeps its stream stable (numpy's policy for default_rng).
"""

from __future__ import annotations

import numpy as np

from dflash_compat.inputs import fold_seed

__all__ = ["step_rng", "step_draw", "sample_anchors", "rank_slice", "position_weights", "block_valid", "weight_total"]


def step_rng(seed: int, step: int) -> np.random.Generator:
    return np.random.default_rng([fold_seed(seed), step])


def sample_anchors(loss_mask: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Up to `count` distinct anchor positions, sorted, shared by the global batch: positions a >= 1 (a
    block needs context) whose next position is loss-masked in at least one sequence.
    loss_mask [G, T] bool -> [A] int64."""
    usable = np.asarray(loss_mask, dtype=bool)[:, 2:].any(axis=0)  # position a+1 is a label for anchor a
    candidates = np.flatnonzero(usable) + 1
    if candidates.size == 0:
        return candidates.astype(np.int64)
    pick = rng.permutation(candidates.size)[:count]
    return np.sort(candidates[pick]).astype(np.int64)


def step_draw(seed: int, step: int, n_sequences: int, global_batch: int, loss_mask: np.ndarray,
              anchors: int) -> tuple[np.ndarray, np.ndarray]:
    """-> (rows [G] int64 into the packed sequences, anchors [A] int64) of this step, for every rank."""
    rng = step_rng(seed, step)
    rows = rng.integers(0, n_sequences, size=global_batch, dtype=np.int64)
    return rows, sample_anchors(loss_mask[rows], anchors, rng)


def rank_slice(rank: int, world: int, global_batch: int) -> slice:
    per = global_batch // world
    return slice(rank * per, (rank + 1) * per)


def position_weights(block_size: int, gamma: float) -> np.ndarray:
    """[bs] float32: 0 for the anchor, exp(-(k-1)/gamma) for block position k >= 1 (the loss weights)."""
    k = np.arange(block_size, dtype=np.float32)
    return np.where(k == 0, np.float32(0), np.exp(-(k - 1) / np.float32(gamma))).astype(np.float32)


def block_valid(loss_mask: np.ndarray, anchors: np.ndarray, block_size: int) -> np.ndarray:
    """[G, A, bs] bool: block position k of anchor a has a label (inside the sequence, loss-masked, k >= 1)."""
    t = loss_mask.shape[1]
    pos = anchors[:, None] + np.arange(block_size)[None, :]
    valid = np.asarray(loss_mask, dtype=bool)[:, np.minimum(pos, t - 1)] & (pos < t)[None]
    valid[:, :, 0] = False
    return valid


def weight_total(loss_mask: np.ndarray, anchors: np.ndarray, block_size: int, gamma: float) -> float:
    """The sum of the loss weights over the whole global batch: the one denominator every rank (and
    both frameworks) divide their share of the weighted cross-entropy by, so that the ranks' losses
    add up to the global batch's mean."""
    w = position_weights(block_size, gamma).astype(np.float64)[None, None, :] * block_valid(loss_mask, anchors,
                                                                                            block_size)
    return float(max(w.sum(), 1e-6))
