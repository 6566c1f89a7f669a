"""What the vLLM rules share (not a rule: no RULE here): the K vLLM will run a DFlash draft with."""

from __future__ import annotations

from typing import NamedTuple, Optional

from dflash_compat.checker import Location, RuleContext
from dflash_compat.rules._common import is_int
from dflash_compat.specs import get_dotted

__all__ = ["GivenK", "given_k"]


class GivenK(NamedTuple):
    value: int
    where: str  # how to name it in a message
    locations: list[Location]


def given_k(ctx: RuleContext) -> Optional[GivenK]:
    """K = num_speculative_tokens as vLLM 0.33.0 gets it, or None when vLLM would refuse to start.

    The launch option wins; serving a speculators checkpoint itself takes its `speculative_tokens`
    (transformers_utils/configs/speculators/base.py:121-131); a draft config's `n_predict` is the
    default (config/speculative.py:1600-1603). There is no other default (config/speculative.py:1614-1618).
    """
    if ctx.options.num_speculative_tokens is not None:
        return GivenK(ctx.options.num_speculative_tokens, "--num-speculative-tokens", [])
    d = ctx.draft
    if d.speculative_tokens is not None:
        return GivenK(d.speculative_tokens, "speculative_tokens", [ctx.dloc("speculative_tokens")])
    n_predict = get_dotted(d.raw, "n_predict")
    if is_int(n_predict) and n_predict > 0:
        return GivenK(n_predict, "n_predict", [ctx.dloc("n_predict", "n_predict")])
    return None
