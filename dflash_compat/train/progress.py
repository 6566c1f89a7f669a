"""The figures of a run, without torch (both trainers use them): the learning-rate schedule, the
progress line and bar (tokens/s, ETA), the statistics of a step from its summed counts, the result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from dflash_compat.train.config import TrainConfig

__all__ = ["learning_rate", "progress_line", "FIRST_LOGS", "TrainResult", "stats_from_sums", "StopFlag"]


@dataclass
class TrainResult:
    out: Path
    steps: int
    loss: float
    tau: Optional[float]
    history: list[dict]
    seconds: float


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warmup, then cosine decay to lr * min_lr_ratio at the last step."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(1, config.steps - config.warmup)
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, (step - config.warmup) / span)))
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine)


FIRST_LOGS = (1, 3, 10)  # steps (of this run) that are logged early, so that the ETA comes within minutes


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _rate(tokens_per_s: float) -> str:
    return f"{tokens_per_s / 1000:.1f}k tok/s" if tokens_per_s >= 10_000 else f"{tokens_per_s:.0f} tok/s"


def progress_line(step: int, total: int, loss: float, tau: Optional[float], elapsed: float, done: int,
                  tokens_per_s: Optional[float] = None) -> str:
    """`step 3/1000  loss 7.012  tau -  2.41 s/step  850 tok/s  ETA 40m05s`: the mean time of this run's steps
    so far (held-out evaluations included) times the steps left; tokens/s: sequence tokens of the global
    batch (all ranks) per second."""
    per = elapsed / max(done, 1)
    left = total - step
    eta = f"ETA {_duration(per * left)}" if left else f"took {_duration(elapsed)}"
    speed = "" if tokens_per_s is None else f"  {_rate(tokens_per_s)}"
    return (f"step {step}/{total}  loss {loss:.3f}  tau {'-' if tau is None else f'{tau:.2f}'}  "
            f"{per:.2f} s/step{speed}  {eta}")


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
               TextColumn("loss {task.fields[loss]}  tau {task.fields[tau]}  {task.fields[speed]}"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    return Progress(*columns, console=console, disable=not (enabled and console.is_terminal))


def stats_from_sums(sums, block_size: int) -> dict:
    """Per-position accuracy and the mean accepted run + 1 over full blocks (an estimate of tau) from
    the (rank-summed) counts of block_loss; sums[0], the weighted cross-entropy, is not used here."""
    values = [float(v) for v in sums]
    n = block_size - 1
    right, labelled, run, full = values[1:1 + n], values[1 + n:1 + 2 * n], values[-2], values[-1]
    return {"accuracy": [r / max(v, 1.0) for r, v in zip(right, labelled)],
            "block_tau": run / full if full else math.nan}


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None or math.isnan(x) else round(x, 3)


class StopFlag:
    """Ctrl-C (SIGINT) during training: the first one asks the run to stop at the end of the current step (every
    rank learns it through the step's collective, so all stop after the same step and rank 0 saves a
    checkpoint of it); a second one interrupts at once. Installed only in the main thread, removed after."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def _handler(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> "StopFlag":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
