"""The DFlash training objective: anchored blocks, their attention mask, and the decaying cross-entropy.

For a sequence x with target features f (outputs of the target layers at the draft's layer ids):
pick anchors a (positions with a loss mask); each anchor's block is [x_a, mask x (bs-1)] at RoPE
positions a .. a+bs-1, and sees the context features f_0 .. f_{a-1} (exactly what the runtime's
draft sees when it drafts after committing x_a) plus its own block, bidirectionally; blocks never see
each other. Block position k (1..bs-1) is trained to predict label y_{a+k}: the target's own greedy
prediction at a+k (self-distillation: argmax of the target's logits at a+k-1) or the data token
x_{a+k}, with weight exp(-(k-1)/gamma): an early miss ends the accepted run, so early positions
matter most. All anchors of a batch go through the draft in one forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F

from dflash_compat.train.progress import stats_from_sums  # noqa: F401 - re-exported

__all__ = ["sample_anchors", "block_attention_mask", "position_weights", "BlockBatch", "make_batch", "block_loss",
           "draft_logits", "stats_from_sums"]


def position_weights(block_size: int, gamma: float, device=None) -> torch.Tensor:
    """[bs]: 0 for the anchor, exp(-(k-1)/gamma) for block position k >= 1."""
    k = torch.arange(block_size, dtype=torch.float32, device=device)
    return torch.where(k == 0, torch.zeros_like(k), torch.exp(-(k - 1) / gamma))


def sample_anchors(loss_mask: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """Up to `count` distinct anchor positions, sorted, shared by the batch: positions a >= 1 (a
    block needs context) whose next position is loss-masked in at least one sequence.
    loss_mask [B, T] bool -> [A] long."""
    usable = loss_mask[:, 2:].any(dim=0)  # [T-2]: position a+1 is a label for anchor a = index + 1
    candidates = torch.nonzero(usable, as_tuple=False).flatten() + 1
    if candidates.numel() == 0:
        return candidates
    pick = torch.randperm(candidates.numel(), generator=generator)[:count]
    return candidates[pick.to(candidates.device)].sort().values


def block_attention_mask(context: int, anchors: torch.Tensor, block_size: int, causal: bool = False,
                         window: Optional[int] = None) -> torch.Tensor:
    """[Q, C+Q] boolean, True = visible, Q = A * bs. Keys: the C context positions, then the block
    tokens. A block token of anchor a sees context positions < a and every token of its own block
    (before it only, if `causal`; within `window` positions, if sliding), like the runtime's draft."""
    device = anchors.device
    bs = block_size
    q_anchor = anchors.repeat_interleave(bs)  # [Q]
    q_pos = q_anchor + torch.arange(bs, device=device).repeat(anchors.numel())  # [Q]
    sees_context = torch.arange(context, device=device)[None, :] < q_anchor[:, None]  # [Q, C]
    block = torch.arange(q_pos.numel(), device=device) // bs
    same_block = block[:, None] == block[None, :]  # [Q, Q]
    visible = torch.cat([sees_context, same_block], dim=1)
    if causal or window is not None:
        k_pos = torch.cat([torch.arange(context, device=device), q_pos])  # [C+Q]
        if causal:
            visible &= k_pos[None, :] <= q_pos[:, None]
        if window is not None:
            visible &= q_pos[:, None] - k_pos[None, :] < window
            if not causal:
                visible &= k_pos[None, :] - q_pos[:, None] < window
    return visible


@dataclass
class BlockBatch:
    """One step's inputs: token ids [B, T], loss mask [B, T], shared anchors [A]."""

    ids: torch.Tensor
    loss_mask: torch.Tensor
    anchors: torch.Tensor


def make_batch(ids: torch.Tensor, loss_mask: torch.Tensor, count: int, generator: torch.Generator) -> BlockBatch:
    return BlockBatch(ids, loss_mask, sample_anchors(loss_mask, count, generator))


@torch.no_grad()
def target_pass(target, draft, ids: torch.Tensor, labels: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The frozen target on the whole sequences: context features [B, T, L*H] (captured by the
    adapter as at inference) and labels [B, T]: label[p] = what position p should hold."""
    out = target.forward(ids, target.new_cache(), 0, capture=draft.target_layer_ids)
    if labels == "data":
        return out.features, ids
    greedy = out.logits.argmax(dim=-1)  # [B, T]: the target's prediction for position p + 1
    return out.features, torch.cat([ids[:, :1], greedy[:, :-1]], dim=1)


def draft_logits(draft, target, noise: torch.Tensor, features: torch.Tensor, positions: torch.Tensor,
                 masks) -> torch.Tensor:
    """The draft's part of a step: one masked forward and the target's head -> logits [B, Q, V]."""
    return draft.compute_logits(draft.forward_masked(noise, features, positions, masks), target.head)


def block_loss(draft, target, batch: BlockBatch, gamma: float, labels: str = "target", *,
               total: Optional[float] = None, run=None) -> tuple[torch.Tensor, dict]:
    """Weighted cross-entropy of one batch of anchored blocks, and statistics (per-position
    accuracy, the acceptance length the predictions would give).

    `total`: the denominator, the sum of the loss weights over the global batch (sampler.weight_total),
    so that the ranks' losses add up to the global batch's (default: this batch's own weights).
    `run(noise, features, positions, masks)`: the draft's forward (a DistributedDataParallel wrapper
    of `draft_logits`; default: `draft_logits` itself). stats["sums"]: the weighted cross-entropy and
    the statistics' counts as one float64 tensor, to be summed over the ranks (stats_from_sums)."""
    ids, anchors, bs = batch.ids, batch.anchors, draft.block_size
    b, t = ids.shape
    features, label_ids = target_pass(target, draft, ids, labels)
    pos = anchors[:, None] + torch.arange(bs, device=ids.device)  # [A, bs]
    inside = pos < t
    pos_c = pos.clamp(max=t - 1)
    block = torch.full((b, anchors.numel(), bs), draft.mask_token_id, dtype=torch.long, device=ids.device)
    block[:, :, 0] = ids[:, anchors]
    with torch.no_grad():
        noise = target.embed(block.flatten(1))  # [B, Q, H]
        if draft.cfg.input_embedding_scale != 1.0:
            noise = noise * draft.cfg.input_embedding_scale
    noise = noise.to(next(draft.parameters()).dtype)
    features = features.to(noise.dtype)
    masks = lambda causal, window: block_attention_mask(t, anchors, bs, causal, window)  # noqa: E731
    if run is None:
        logits = draft_logits(draft, target, noise, features, pos.flatten(), masks)
    else:
        logits = run(noise, features, pos.flatten(), masks)
    logits = logits.float().view(b, anchors.numel(), bs, -1)  # [B, A, bs, V]
    wanted = label_ids[:, pos_c]  # [B, A, bs]
    valid = batch.loss_mask[:, pos_c] & inside[None]
    valid[:, :, 0] = False  # the anchor is given, not predicted
    weight = position_weights(bs, gamma, ids.device)[None, None, :] * valid  # [B, A, bs]
    ce = F.cross_entropy(logits.flatten(0, 2), wanted.flatten(), reduction="none").view_as(weight)
    numerator = (ce * weight).sum()
    loss = numerator / (weight.sum().clamp_min(1e-6) if total is None else total)
    sums = torch.cat([numerator.detach().double().reshape(1), _counts(logits.detach(), wanted, valid)])
    return loss, dict(stats_from_sums(sums, bs), sums=sums)


def _counts(logits: torch.Tensor, wanted: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """float64 [2 * (bs-1) + 2]: right and labelled per block position 1.., the accepted runs + 1 summed
    over full blocks, and the number of full blocks."""
    right = (logits.argmax(dim=-1) == wanted) & valid  # [B, A, bs]
    full = valid[:, :, 1:].all(dim=-1)  # blocks whose every position has a label
    run = right[:, :, 1:].int().cumprod(dim=-1).sum(dim=-1).double() + 1  # [B, A]
    return torch.cat([right.sum(dim=(0, 1))[1:].double(), valid.sum(dim=(0, 1))[1:].double(),
                      run[full].sum().reshape(1), full.sum().double().reshape(1)])
