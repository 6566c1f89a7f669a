"""What a person looks at during and after a run: TensorBoard event logs and a loss / tau plot.

    OUT/tensorboard/events.out.tfevents.*     train/loss, train/block_tau, train/lr, train/tokens_per_s,
                                              eval/tau, per step (rank 0 only): `tensorboard --logdir OUT`
    OUT/training.png                          loss per step and held-out tau at the evaluations

The event files are written by tensorboardX, the standalone writer of TensorBoard's format: it needs
numpy and protobuf only, where torch.utils.tensorboard needs the whole `tensorboard` package (its server,
grpcio, werkzeug, markdown) to write the same records. The plot is matplotlib's (the `[plot]` extra,
headless Agg backend). Either one missing costs one line on stderr, never the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["EventLog", "open_event_log", "plot_history", "TENSORBOARD_DIR", "PLOT_FILE"]

TENSORBOARD_DIR = "tensorboard"
PLOT_FILE = "training.png"


class EventLog:
    """Scalars per step into TensorBoard event files (or nowhere, when tensorboardX is missing)."""

    def __init__(self, writer: Any = None) -> None:
        self._writer = writer

    @property
    def enabled(self) -> bool:
        return self._writer is not None

    def scalars(self, step: int, values: dict[str, Optional[float]]) -> None:
        if self._writer is None:
            return
        for tag, value in values.items():
            if value is not None and value == value:  # NaN (no full block this step) is left out
                self._writer.add_scalar(tag, float(value), step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def open_event_log(out: Path, log: Callable[[str], None], purge_from: Optional[int] = None) -> EventLog:
    """An EventLog writing into OUT/tensorboard; `purge_from`: a resumed run's first step (TensorBoard hides
    the older run's events past it, so a resumed curve has no doubled steps)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        log("note: no TensorBoard log (needs tensorboardX: pip install 'dflash-compat[train]')")
        return EventLog()
    from dflash_compat.files.safe_write import make_output_folder

    folder = make_output_folder(out / TENSORBOARD_DIR)
    kwargs = {"purge_step": purge_from} if purge_from else {}
    return EventLog(SummaryWriter(logdir=str(folder), flush_secs=30, **kwargs))


def plot_history(history: list[dict], path: Path, log: Callable[[str], None], title: str = "") -> Optional[Path]:
    """Loss per step (left axis) and held-out tau at the evaluated steps (right axis) as a PNG; -> the path, or
    None with one line when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        log("note: no training.png (the plot needs matplotlib: pip install 'dflash-compat[plot]')")
        return None
    from dflash_compat.files.safe_write import write_output

    steps = [h["step"] for h in history]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    try:
        ax.plot(steps, [h["loss"] for h in history], color="tab:blue", linewidth=1, label="loss")
        ax.set_xlabel("step")
        ax.set_ylabel("loss", color="tab:blue")
        evaluated = [(h["step"], h["tau"]) for h in history if h.get("tau") is not None]
        if evaluated:
            right = ax.twinx()
            right.plot(*zip(*evaluated), color="tab:orange", marker="o", label="held-out tau")
            right.set_ylabel("held-out tau (mean accepted length)", color="tab:orange")
        ax.set_title(title or "dflash-check train")
        fig.tight_layout()
        from io import BytesIO

        buffer = BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    write_output(path, buffer.getvalue(), force=True)
    return path
