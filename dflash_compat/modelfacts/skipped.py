"""`Skipped`: a deep fact that could not be gathered, and why (a value, not an exception)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Skipped"]


@dataclass(frozen=True)
class Skipped:
    """Why a probe gathered nothing: `reason` is a short code (torch-missing, remote-code,
    no-safetensors, ...), `detail` the sentence a user reads; `framework` the inspector that tried."""

    reason: str
    detail: str = ""
    framework: Optional[str] = None

    @property
    def note(self) -> str:
        return f"skipped ({self.reason}): {self.detail}" if self.detail else f"skipped ({self.reason})"
