"""Telling a mistyped subcommand (`smoek`) from `check`'s TARGET, the group's default first argument."""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["mistyped_command"]


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    neighbours each cost 1 (`smoek` is one step from `smoke`)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, prev2[j - 2] + 1)
            row.append(cost)
        prev2, prev = prev, row
    return prev[-1]


def mistyped_command(word: str, commands: list[str]) -> Optional[str]:
    """The command `word` is a typo of, or None when it reads as `check`'s TARGET. A TARGET is a path
    that exists or a Hub id; a plain word one or two edits from a command name (one for short
    words) and not on disk is a typo: Hub ids of that shape (`org/name`) carry a slash."""
    if not word or word.startswith("-") or any(c in word for c in "/\\.@~:") or os.path.exists(word):
        return None
    limit = 1 if len(word) <= 4 else 2
    scored = sorted((_edit_distance(word.lower(), name), abs(len(name) - len(word)), name) for name in commands)
    return scored[0][2] if scored and scored[0][0] <= limit else None
