"""DF108: the draft was trained for a target of a different depth."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_LOAD_DRAFT, REF_DRAFT_INIT, SGL_TARGET_DEPTH


def check(ctx: RuleContext):
    d, n = ctx.draft, ctx.target.num_hidden_layers
    if d.num_target_layers is None or n is None or d.num_target_layers == n:
        return
    guessed = d.target_layer_ids_guessed
    tail = (
        f"; the layer ids {quote(d.target_layer_ids)} were derived from it, so they are wrong for this target"
        if guessed
        else ": the draft was probably trained for another model"
    )
    yield Violation(
        f"draft num_target_layers {d.num_target_layers} != target num_hidden_layers {n}{tail}",
        [ctx.dloc("num_target_layers"), ctx.tloc("num_hidden_layers")],
        severity="error" if guessed else None,
    )


RULE = Rule(
    code="DF108",
    name="num-target-layers-mismatch",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft's `num_target_layers` equals the target's decoder depth N. An error when the layer ids are "
    "derived from it (no explicit ids), a warning otherwise.",
    why="It records the depth of the model the draft was trained on; a different value usually means the wrong "
    "target (a Qwen3-4B draft on a Qwen3.5-4B target fails with `mat1 and mat2 shapes cannot be multiplied`). "
    "SGLang only warns.",
    example='target {"num_hidden_layers": 32}, draft {"num_target_layers": 36}',
    fix="Use the draft published for this exact target; if you are sure it fits, correct `num_target_layers`.",
    sources=(REF_DRAFT_INIT, SGL_TARGET_DEPTH, MLX_LOAD_DRAFT),
)
