"""The one place init-draft and train reach the checker: run the public pipeline on a pair.

Kept tiny on purpose, so that a change to the checker's request / entry point touches only this.
"""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = ["check_pair"]


def check_pair(target: str, draft: str, *, deep: bool = False, backends: Optional[Sequence[str]] = None,
               token: Optional[str] = None):
    """The checker's Report for TARGET + DRAFT (config rules only unless `deep`)."""
    from dflash_compat.checker import BACKENDS
    from dflash_compat.deployment.options import CheckOptions
    from dflash_compat.pipeline.check import CheckRequest, run_check

    request = CheckRequest(target=target, draft=draft, backends=tuple(backends or BACKENDS),
                           options=CheckOptions(deep=deep, token=token), token=token)
    return run_check(request)
