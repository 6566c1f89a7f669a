"""The trainer's settings (plain data, no torch), with the published recipe's defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from dflash_compat.exceptions import InputError

__all__ = ["TrainConfig", "default_gamma", "LABEL_CHOICES"]

LABEL_CHOICES = ("target", "data")


def default_gamma(block_size: int) -> float:
    """Decay of the per-position loss weight exp(-(k-1)/gamma): 4 for block 8 and 7 for block 16
    (the published values), linear in between and beyond."""
    return max(1.0, 4.0 + (block_size - 8) * 3.0 / 8.0)


@dataclass
class TrainConfig:
    steps: int = 1000
    batch_size: int = 8  # sequences per step (they share one set of anchors)
    seq_len: int = 512  # tokens per training sequence
    anchors: int = 256  # anchor positions per sequence (fewer when the sequence is shorter)
    lr: float = 6e-4
    min_lr_ratio: float = 0.1  # cosine decay to lr * this
    warmup: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    gamma: Optional[float] = None  # None: default_gamma(block_size)
    labels: str = "target"  # target: the target's own greedy predictions; data: the data's next tokens
    held_out: float = 0.1  # share of the documents (or of the text) kept for evaluation
    eval_every: int = 200  # steps between held-out tau measurements (0: only at the end)
    eval_prompts: int = 4
    eval_prompt_tokens: int = 48
    eval_new_tokens: int = 64
    checkpoint_every: int = 200  # steps between checkpoints (0: only at the end)
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda
    export_dtype: str = "bfloat16"
    max_documents: Optional[int] = None  # read at most this many documents (sorted order)
    regenerate: bool = False  # answer the data's prompts with the target (built-in runtime) and train on that
    regenerate_tokens: int = 128  # the most tokens of each regenerated answer
    prompt_tokens: int = 32  # a plain text's prompt for regeneration: its first tokens
    shard_target: str = "auto"  # distributed: FSDP2-shard the target's decoder layers (auto | never | always)

    def validate(self) -> "TrainConfig":
        positive = ("steps", "batch_size", "seq_len", "anchors", "eval_prompts", "eval_prompt_tokens",
                    "eval_new_tokens", "regenerate_tokens", "prompt_tokens")
        for name in positive:
            if getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if not self.lr > 0 or not 0 <= self.min_lr_ratio <= 1:
            raise InputError("--lr must be > 0 and the minimum lr ratio within 0..1")
        if self.labels not in LABEL_CHOICES:
            raise InputError(f"--labels {self.labels}: expected one of {', '.join(LABEL_CHOICES)}")
        if not 0 < self.held_out < 1:
            raise InputError(f"--held-out {self.held_out}: expected a share between 0 and 1")
        if self.gamma is not None and not self.gamma > 0:
            raise InputError("--gamma must be > 0")
        if self.device not in ("auto", "cpu", "cuda"):
            raise InputError(f"--device {self.device}: expected auto, cpu or cuda")
        if self.export_dtype not in ("bfloat16", "float32", "float16"):
            raise InputError(f"--export-dtype {self.export_dtype}: expected bfloat16, float32 or float16")
        if self.shard_target not in ("auto", "never", "always"):
            raise InputError(f"--shard-target {self.shard_target}: expected auto, never or always")
        if self.max_documents is not None and self.max_documents < 1:
            raise InputError(f"--max-samples must be at least 1 (got {self.max_documents})")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
