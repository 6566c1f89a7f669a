"""The training loop: frozen target, our runtime's draft module, AdamW with warmup + cosine decay,
a rich progress bar, held-out tau measured with our own spec_generate, checkpoints and resume."""

from __future__ import annotations

import copy
import math
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from dflash_compat.exceptions import ResourceError
from dflash_compat.inputs import fold_seed
from dflash_compat.train.checkpoint import export_draft, save_checkpoint, write_json
from dflash_compat.train.config import TrainConfig, default_gamma
from dflash_compat.train.objective import block_loss, make_batch

__all__ = ["Session", "TrainResult", "run_training", "held_out_tau"]


@dataclass
class Session:
    """Everything the loop works on, prepared by `dflash_compat.train.prepare`."""

    config: TrainConfig
    out: Path
    target: Any  # a TargetAdapter (frozen)
    draft: Any  # runtime.torch_draft.DFlashDraftModel, float32, trainable
    draft_config: dict  # the draft's config.json
    ids: torch.Tensor  # [N, T] packed training sequences
    loss_mask: torch.Tensor  # [N, T]
    prompts: list[list[int]]  # held-out prompts for tau
    stop_ids: list[int]
    device: torch.device
    optimizer: Optional[torch.optim.Optimizer] = None
    start_step: int = 0
    history: list[dict] = field(default_factory=list)
    data_summary: dict = field(default_factory=dict)


@dataclass
class TrainResult:
    out: Path
    steps: int
    loss: float
    tau: Optional[float]
    history: list[dict]
    seconds: float


def make_optimizer(draft, config: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for n, p in draft.named_parameters() if p.dim() >= 2]
    plain = [p for n, p in draft.named_parameters() if p.dim() < 2]  # norms: no weight decay
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.95))


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warmup, then cosine decay to lr * min_lr_ratio at the last step."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(1, config.steps - config.warmup)
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, (step - config.warmup) / span)))
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine)


def held_out_tau(draft, target, prompts: list[list[int]], new_tokens: int, stop_ids: list[int]) -> Optional[float]:
    """Mean acceptance length of our runtime's greedy spec_generate on the held-out prompts."""
    from dflash_compat.runtime.torch_generate import spec_generate

    if not prompts:
        return None
    probe = draft if next(draft.parameters()).dtype == target.dtype else copy.deepcopy(draft).to(target.dtype)
    lengths: list[int] = []
    was_training = draft.training
    probe.eval()
    for prompt in prompts:
        result = spec_generate(probe, target, prompt, max_new_tokens=new_tokens, stop_token_ids=stop_ids, timed=False)
        lengths += result.stats.acceptance_lengths
    draft.train(was_training)
    return sum(lengths) / len(lengths) if lengths else None


def _is_oom(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, MemoryError) or "out of memory" in text or "can't allocate memory" in text


def _step(s: Session, step: int, gamma: float) -> tuple[float, dict]:
    c = s.config
    # same batch on resume; folded into the seeds torch takes (a --seed near 2**64 would overflow it)
    gen = torch.Generator().manual_seed(fold_seed(c.seed * 1_000_003 + step))
    rows = torch.randint(0, s.ids.shape[0], (c.batch_size,), generator=gen)
    batch = make_batch(s.ids[rows].to(s.device), s.loss_mask[rows].to(s.device), c.anchors, gen)
    for group in s.optimizer.param_groups:
        group["lr"] = learning_rate(c, step)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if s.device.type == "cuda" else nullcontext()
    with autocast:
        loss, stats = block_loss(s.draft, s.target, batch, gamma, c.labels)
    s.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(s.draft.parameters(), c.grad_clip)
    s.optimizer.step()
    return float(loss.detach()), stats


FIRST_LOGS = (1, 3, 10)  # steps (of this run) that are logged early, so that the ETA comes within minutes


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(step: int, total: int, loss: float, tau: Optional[float], elapsed: float, done: int) -> str:
    """`step 3/1000  loss 7.012  tau -  2.41 s/step  ETA 40m05s`: the mean time of this run's steps so far
    (held-out evaluations included) times the steps left."""
    per = elapsed / max(done, 1)
    left = total - step
    eta = f"ETA {_duration(per * left)}" if left else f"took {_duration(elapsed)}"
    return (f"step {step}/{total}  loss {loss:.3f}  tau {'-' if tau is None else f'{tau:.2f}'}  "
            f"{per:.2f} s/step  {eta}")


def _progress(enabled: bool):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from dflash_compat.terminal import make_console

    console = make_console(stderr=True)
    columns = (TextColumn("training"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]}  tau {task.fields[tau]}"), TimeElapsedColumn(),
               TimeRemainingColumn())
    return Progress(*columns, console=console, disable=not (enabled and console.is_terminal))


def run_training(s: Session, *, progress: bool = True, log: Optional[Callable[[str], None]] = None) -> TrainResult:
    """Train from s.start_step to s.config.steps; checkpoints, exports, returns the figures."""
    c = s.config
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    gamma = c.gamma or default_gamma(s.draft.block_size)
    s.draft.train()
    started, loss, tau = time.perf_counter(), math.nan, None
    every_log = max(1, c.steps // 20)
    with _progress(progress) as bar:
        task = bar.add_task("train", total=c.steps, completed=s.start_step, loss="-", tau="-")
        step = s.start_step
        try:
            for step in range(s.start_step, c.steps):
                loss, stats = _step(s, step, gamma)
                last = step + 1 == c.steps
                if last or (c.eval_every and (step + 1) % c.eval_every == 0):
                    tau = held_out_tau(s.draft, s.target, s.prompts, c.eval_new_tokens, s.stop_ids)
                s.history.append({"step": step + 1, "loss": round(loss, 4), "block_tau": _round(stats["block_tau"]),
                                  "tau": _round(tau) if last or (c.eval_every and (step + 1) % c.eval_every == 0)
                                  else None})
                bar.update(task, advance=1, loss=f"{loss:.3f}", tau="-" if tau is None else f"{tau:.2f}")
                done = step + 1 - s.start_step
                if bar.disable and ((step + 1) % every_log == 0 or last or done in FIRST_LOGS):
                    log(progress_line(step + 1, c.steps, loss, tau, time.perf_counter() - started, done))
                if c.checkpoint_every and (step + 1) % c.checkpoint_every == 0 and not last:
                    save_checkpoint(s.out, s.draft, s.optimizer, step + 1, s.draft_config, s.history)
        except KeyboardInterrupt:
            save_checkpoint(s.out, s.draft, s.optimizer, step, s.draft_config, s.history)
            raise
        except (RuntimeError, MemoryError) as exc:
            if not _is_oom(exc):
                raise
            raise ResourceError(
                f"out of memory at step {step + 1} ({c.batch_size} sequences x {c.seq_len} tokens, up to {c.anchors} "
                f"anchors x block {s.draft.block_size}); lower --batch-size, --anchors or --seq-len") from None
    seconds = time.perf_counter() - started
    save_checkpoint(s.out, s.draft, s.optimizer, c.steps, s.draft_config, s.history)
    export_draft(s.out, s.draft, s.draft_config, c.export_dtype)
    write_json(s.out / "training.json", {"config": c.to_dict(), "gamma": gamma, "data": s.data_summary,
                                         "seconds": round(seconds, 1), "history": s.history})
    return TrainResult(s.out, c.steps, loss, tau, s.history, seconds)


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None or math.isnan(x) else round(x, 3)
