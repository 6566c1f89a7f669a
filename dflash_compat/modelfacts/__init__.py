"""Typed deep facts: what the probes return about the target's module tree and the draft's weights.

Frozen stdlib dataclasses (no pydantic). A probe returns one of these or a `Skipped`; the rules read
them by attribute, so a misspelt fact name fails instead of reading as "absent". The classes load on
first use (PEP 562): a config-only check, which gathers no deep facts, never pays for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dflash_compat.modelfacts.modules import (
        CacheFacts,
        DeprecatedKwarg,
        ForwardFacts,
        LayerReturns,
        MlxCache,
        MlxFacts,
        MlxPaths,
        ModuleFacts,
        ModulePaths,
        Scaling,
    )
    from dflash_compat.modelfacts.skipped import Skipped
    from dflash_compat.modelfacts.weights import DraftWeights

__all__ = [
    "CacheFacts",
    "DeprecatedKwarg",
    "DraftWeights",
    "ForwardFacts",
    "LayerReturns",
    "MlxCache",
    "MlxFacts",
    "MlxPaths",
    "ModuleFacts",
    "ModulePaths",
    "Scaling",
    "Skipped",
]

_HOME = {name: "modules" for name in __all__}
_HOME.update(Skipped="skipped", DraftWeights="weights")


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
