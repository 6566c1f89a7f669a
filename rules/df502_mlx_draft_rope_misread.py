"""DF502: the draft's RoPE base is not a top-level `rope_theta`."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.specs._reader import MISSING, get_dotted


def check(ctx: CheckContext):
    d = ctx.draft
    if d.rope.theta is None or get_dotted(d.raw, "rope_theta") not in (MISSING, None):
        return  # no theta at all is DF117's business (the 10000 default)
    yield Violation(
        f"draft rope_theta {d.rope.theta:g} is only at `{d.key('rope.theta')}`; MLX ports that read only the "
        "top-level key fail or fall back to another base",
        [ctx.dloc("rope.theta")],
    )


RULE = Rule(
    code="DF502",
    name="mlx-rope-theta-not-top-level",
    severity="warning",
    backends=("mlx",),
    check=check,
    what="The draft config has a top-level `rope_theta`.",
    why="The MLX draft loader historically read only the top-level key, while transformers 5 writes it inside "
    "`rope_parameters`; a loader that misses it either stops or rotates with a default base, and a wrong base "
    "gives acceptance near 1 silently.",
    example='draft {"rope_parameters": {"rope_type": "default", "rope_theta": 1000000}}',
    fix="Add `\"rope_theta\": <value>` at the top level of the draft config (same value as in rope_parameters).",
)
