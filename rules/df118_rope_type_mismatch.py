"""DF118: the draft's RoPE variant (scaling type and factor, layout) differs from the target's."""

from __future__ import annotations

import math

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def _rope_type(r) -> str:
    # mrope is the plain rotation applied per section; DF125 speaks about it.
    return "default" if r.rope_type in (None, "default", "mrope") else r.rope_type


def check(ctx: CheckContext):
    t, d = ctx.target.rope, ctx.draft.rope
    rows = (  # label, spec field, key to point at when the setting is absent, target value, draft value
        ("rope_type", "rope.rope_type", "rope_scaling", _rope_type(t), _rope_type(d)),
        ("interleaved layout", "rope.interleaved", "rope_interleave", bool(t.interleaved), bool(d.interleaved)),
    )
    for label, field, absent, tv, dv in rows:
        if tv != dv:
            yield Violation(
                f"draft RoPE {label} {quote(dv)} != target {quote(tv)}",
                [ctx.dloc(field, ctx.draft.key(field, absent)), ctx.tloc(field, ctx.target.key(field, absent))],
            )
    if _rope_type(t) == _rope_type(d) != "default" and t.factor is not None and d.factor is not None:
        if not math.isclose(float(t.factor), float(d.factor)):
            yield Violation(
                f"draft RoPE scaling factor {quote(d.factor)} != target {quote(t.factor)}",
                [ctx.dloc("rope.factor"), ctx.tloc("rope.factor")],
            )


RULE = Rule(
    code="DF118",
    name="rope-type-mismatch",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft's RoPE variant matches the target's: `rope_type` (default / linear / yarn / llama3 ...), "
    "its scaling factor, and the interleaved vs neox layout. (`partial_rotary_factor` is not compared: published "
    "drafts for partial-rotary targets such as Qwen3.5 rotate fully.)",
    why="Drafts are trained with the target's RoPE settings; a config that drops the scaling or changes the "
    "layout rotates positions differently from training, which costs acceptance without any error.",
    example='target {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, draft {"rope_scaling": null}',
    fix="Copy the RoPE settings the draft was trained with (normally the target's) into the draft config.",
)
