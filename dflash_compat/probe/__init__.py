"""Deep inspection: facts from the target's module tree and the draft's weight headers."""

from __future__ import annotations

from typing import Callable, Optional

__all__ = ["get_deep_inspector"]


def get_deep_inspector(framework: str = "auto") -> Optional[Callable]:
    """The inspector for `framework` (auto / torch / mlx), imported lazily; None when unavailable."""
    return None
