"""Typed deep facts: what the probes return about the target's module tree and the draft's weights.

Frozen stdlib dataclasses (no pydantic: a config-only check never builds one and must start fast).
A probe returns one of these or a `Skipped`; the rules read them by attribute, so a misspelt fact
name fails instead of reading as "absent".
"""

from .modules import (
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
from .skipped import Skipped
from .weights import DraftWeights

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
