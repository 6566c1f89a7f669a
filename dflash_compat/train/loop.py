"""The training loop: frozen target, our runtime's draft module, AdamW with warmup + cosine decay,
a rich progress bar (tokens/s, ETA), held-out tau measured with our own spec_generate, TensorBoard
events and a loss / tau plot, checkpoints and resume; on one process or on every rank of a
torch.distributed run (distributed.py: the draft in DistributedDataParallel, rank 0 writes)."""

from __future__ import annotations

import copy
import math
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch

from dflash_compat.exceptions import ResourceError
from dflash_compat.train.checkpoint import export_draft, save_checkpoint, write_json
from dflash_compat.train.config import TrainConfig, default_gamma
from dflash_compat.train.distributed import SINGLE, Dist, all_sum
from dflash_compat.train.objective import BlockBatch, block_loss, draft_logits
from dflash_compat.train.progress import (  # noqa: F401 - progress_line and learning_rate are re-exported
    FIRST_LOGS,
    StopFlag,
    TrainResult,
    _progress,
    _rate,
    _round,
    learning_rate,
    progress_line,
    stats_from_sums,
)
from dflash_compat.train.sampler import rank_slice, step_draw, weight_total

__all__ = ["Session", "TrainResult", "run_training", "held_out_tau", "DraftStep"]


@dataclass
class Session:
    """Everything the loop works on, prepared by `dflash_compat.train.prepare`."""

    config: TrainConfig
    out: Path
    target: Any  # a TargetAdapter (frozen)
    draft: Any  # runtime.torch_draft.DFlashDraftModel, float32, trainable
    draft_config: dict  # the draft's config.json
    ids: np.ndarray  # [N, T] int64 packed training sequences
    loss_mask: np.ndarray  # [N, T] bool
    prompts: list[list[int]]  # held-out prompts for tau
    stop_ids: list[int]
    device: torch.device
    optimizer: Optional[torch.optim.Optimizer] = None
    start_step: int = 0
    history: list[dict] = field(default_factory=list)
    data_summary: dict = field(default_factory=dict)
    dist: Dist = SINGLE
    run: Any = None  # the draft's forward in DistributedDataParallel (None: one process)
    sharded: bool = False  # the target's decoder layers are FSDP2-sharded (every rank runs every evaluation)

    @property
    def global_batch(self) -> int:
        return self.config.batch_size * self.dist.world


class DraftStep(torch.nn.Module):
    """The draft's part of a step as one module, so that DistributedDataParallel sees its forward."""

    def __init__(self, draft) -> None:
        super().__init__()
        self.draft = draft

    def forward(self, noise, features, positions, masks, target):
        return draft_logits(self.draft, target, noise, features, positions, masks)


def wrap_ddp(s: Session) -> None:
    """Wrap the draft in DistributedDataParallel (every rank starts from rank 0's weights)."""
    if not s.dist.active:
        return
    from torch.nn.parallel import DistributedDataParallel

    ids = [s.device.index] if s.device.type == "cuda" else None
    ddp = DistributedDataParallel(DraftStep(s.draft), device_ids=ids)
    target = s.target
    s.run = lambda noise, features, positions, masks: ddp(noise, features, positions, masks, target)


def make_optimizer(draft, config: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for n, p in draft.named_parameters() if p.dim() >= 2]
    plain = [p for n, p in draft.named_parameters() if p.dim() < 2]  # norms: no weight decay
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.95))


def held_out_tau(draft, target, prompts: list[list[int]], new_tokens: int, stop_ids: list[int],
                 d: Dist = SINGLE, sharded: bool = False) -> Optional[float]:
    """Mean acceptance length of our runtime's greedy spec_generate on the held-out prompts. Distributed, the
    prompts are shared out over the ranks and the lengths summed; with a sharded target every rank runs every
    prompt (each target forward is a collective: the ranks must make the same ones)."""
    from dflash_compat.runtime.torch_generate import spec_generate

    if not prompts:
        return None
    mine = prompts if sharded or not d.active else prompts[d.rank::d.world]
    probe = draft if next(draft.parameters()).dtype == target.dtype else copy.deepcopy(draft).to(target.dtype)
    lengths: list[int] = []
    was_training = draft.training
    probe.eval()
    for prompt in mine:
        result = spec_generate(probe, target, prompt, max_new_tokens=new_tokens, stop_token_ids=stop_ids, timed=False)
        lengths += result.stats.acceptance_lengths
    draft.train(was_training)
    total = torch.tensor([float(sum(lengths)), float(len(lengths))], dtype=torch.float64)
    if d.active and not sharded:
        all_sum(d, total)
    return float(total[0] / total[1]) if total[1] else None


def _is_oom(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, MemoryError) or "out of memory" in text or "can't allocate memory" in text


def _step(s: Session, step: int, gamma: float, stop: bool = False) -> tuple[float, dict, bool]:
    """One optimizer step on this rank's share of the global batch; -> (the global batch's loss, statistics,
    whether any rank was asked to stop: `stop` travels with the step's sums)."""
    c, d = s.config, s.dist
    bs = s.draft.block_size
    # the same draw on every rank, for any number of ranks, on resume, and in the MLX trainer (sampler.py)
    rows, anchors = step_draw(c.seed, step, s.ids.shape[0], s.global_batch, s.loss_mask, c.anchors)
    total = weight_total(s.loss_mask[rows], anchors, bs, gamma)
    mine = rows[rank_slice(d.rank, d.world, s.global_batch)]
    batch = BlockBatch(torch.from_numpy(s.ids[mine]).to(s.device), torch.from_numpy(s.loss_mask[mine]).to(s.device),
                       torch.from_numpy(anchors).to(s.device))
    for group in s.optimizer.param_groups:
        group["lr"] = learning_rate(c, step)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if s.device.type == "cuda" else nullcontext()
    with autocast:
        loss, stats = block_loss(s.draft, s.target, batch, gamma, c.labels, total=total, run=s.run)
    s.optimizer.zero_grad(set_to_none=True)
    # DistributedDataParallel averages the ranks' gradients; each rank's loss is its share of the global
    # mean, so the sum is wanted: x world
    (loss * d.world if d.active else loss).backward()
    torch.nn.utils.clip_grad_norm_(s.draft.parameters(), c.grad_clip)
    s.optimizer.step()
    sums = all_sum(d, torch.cat([stats["sums"].cpu(), torch.tensor([float(stop)], dtype=torch.float64)]))
    return float(sums[0]) / total, stats_from_sums(sums[:-1], bs), bool(sums[-1] > 0)


def _evaluates(c: TrainConfig, step: int) -> bool:
    return step == c.steps or bool(c.eval_every and step % c.eval_every == 0)


def run_training(s: Session, *, progress: bool = True, log: Optional[Callable[[str], None]] = None) -> TrainResult:
    """Train from s.start_step to s.config.steps; checkpoints, exports, returns the figures. Distributed, every
    rank runs this; rank 0 alone shows progress and writes files."""
    from dflash_compat.train.observe import EventLog, open_event_log

    c, d = s.config, s.dist
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    gamma = c.gamma or default_gamma(s.draft.block_size)
    s.draft.train()
    wrap_ddp(s)
    events = open_event_log(s.out, log, purge_from=s.start_step + 1 if s.start_step else None) if d.main \
        else EventLog()
    started, loss, tau = time.perf_counter(), math.nan, None
    tokens_per_step = s.global_batch * c.seq_len
    every_log = max(1, c.steps // 20)
    save = (lambda at: save_checkpoint(s.out, s.draft, s.optimizer, at, s.draft_config, s.history,
                                       global_batch=s.global_batch)) if d.main else (lambda at: None)
    stopping = False
    try:
        with StopFlag() as flag, _progress(progress and d.main) as bar:
            task = bar.add_task("train", total=c.steps, completed=s.start_step, loss="-", tau="-", speed="")
            step = s.start_step
            try:
                for step in range(s.start_step, c.steps):
                    began = time.perf_counter()
                    loss, stats, stopping = _step(s, step, gamma, flag.requested)
                    step_s = time.perf_counter() - began
                    evaluated = _evaluates(c, step + 1)
                    if evaluated:
                        tau = held_out_tau(s.draft, s.target, s.prompts, c.eval_new_tokens, s.stop_ids, d, s.sharded)
                    s.history.append({"step": step + 1, "loss": loss, "block_tau": _round(stats["block_tau"]),
                                      "tau": _round(tau) if evaluated else None, "seconds": round(step_s, 4)})
                    done = step + 1 - s.start_step
                    elapsed = time.perf_counter() - started
                    rate = tokens_per_step * done / max(elapsed, 1e-9)
                    events.scalars(step + 1, {"train/loss": loss, "train/block_tau": stats["block_tau"],
                                              "train/lr": learning_rate(c, step), "train/tokens_per_s": rate,
                                              "train/step_seconds": step_s, "eval/tau": tau if evaluated else None})
                    bar.update(task, advance=1, loss=f"{loss:.3f}", tau="-" if tau is None else f"{tau:.2f}",
                               speed=_rate(rate))
                    if d.main and bar.disable and ((step + 1) % every_log == 0 or step + 1 == c.steps
                                                   or done in FIRST_LOGS):
                        log(progress_line(step + 1, c.steps, loss, tau, elapsed, done, rate))
                    if stopping and step + 1 < c.steps:  # Ctrl-C: every rank stops after this same step
                        save(step + 1)
                        raise KeyboardInterrupt
                    if c.checkpoint_every and (step + 1) % c.checkpoint_every == 0 and step + 1 < c.steps:
                        save(step + 1)
            except KeyboardInterrupt:
                if not stopping:  # a second Ctrl-C, mid-step: the last finished step's weights are not at hand
                    save(len(s.history))
                raise
            except (RuntimeError, MemoryError) as exc:
                if not _is_oom(exc):
                    raise
                raise ResourceError(
                    f"out of memory at step {step + 1} ({c.batch_size} sequences x {c.seq_len} tokens per rank, up "
                    f"to {c.anchors} anchors x block {s.draft.block_size}); lower --batch-size, --anchors or "
                    "--seq-len") from None
        seconds = time.perf_counter() - started
        if d.main:
            save(c.steps)
            export_draft(s.out, s.draft, s.draft_config, c.export_dtype)
            write_json(s.out / "training.json", {
                "config": c.to_dict(), "gamma": gamma, "data": s.data_summary, "seconds": round(seconds, 1),
                "ranks": d.world, "global_batch": s.global_batch, "target_sharded": s.sharded,
                "tokens_per_s": round(tokens_per_step * (c.steps - s.start_step) / max(seconds, 1e-9), 1),
                "history": s.history})
            from dflash_compat.train.observe import PLOT_FILE, plot_history

            plot_history(s.history, s.out / PLOT_FILE, log, title=f"{s.out.name}: loss and held-out tau")
    finally:
        events.close()
    return TrainResult(s.out, c.steps, loss, tau, s.history, seconds)
