"""What the llama.cpp rules share about the window of builds: the kinds of draft a build's DFlash loader may
lack, and the first bundled build that has each. Not a rule: no RULE here."""

from __future__ import annotations

from typing import Optional

from dflash_compat.checker import RuleContext

__all__ = ["DRAFT_KINDS", "first_with"]

# kind -> (the tensor whose presence makes a draft GGUF that kind: src/models/dflash.cpp looks it up with
# get_tensor_meta at the builds that load it, the build feature that has its loader, that loader's located fact)
DRAFT_KINDS: dict[str, tuple[str, str, str]] = {
    "DFlash 2": ("selector_hidden.weight", "dflash2", "dflash2_loader"),
    "DSpark": ("markov_w1.weight", "dspark", "dspark_loader"),
}


def first_with(ctx: RuleContext, feature: str) -> Optional[str]:
    """The oldest bundled llama.cpp build that has `feature` (None: none does)."""
    release = ctx.engine("llama.cpp")
    return next((b for b in release.window if ctx.engine("llama.cpp", b).feature(feature)), None)
