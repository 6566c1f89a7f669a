"""DF252: the target's output type has no hidden_states (or no logits) for the reference to read."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT
from dflash_compat.rules._sources import REF_FEATURES, REF_TARGET_CALL


def check(ctx: RuleContext):
    m = ctx.tree
    out = m.forward.output_class if m.forward else None
    if out is None:
        return
    missing = [f for f, ok in (("hidden_states", m.forward.output_has_hidden_states),
                                ("logits", m.forward.output_has_logits)) if ok is False]
    if missing:
        yield Violation(
            f"{m.model_class}.forward returns {out}, which has no {' / '.join(missing)}",
            [ctx.module_loc("forward")],
        )


RULE = Rule(
    code="DF252",
    name="hidden-states-not-returned",
    severity="error",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="The target's forward returns an output type (from its return annotation) with `logits` and "
    "`hidden_states` fields.",
    why="The reference reads `output.logits` to verify and `output.hidden_states[id + 1]` for the draft's "
    "context features; an output without them leaves the draft nothing to condition on.",
    example="a model whose forward returns BaseModelOutput (no logits) or a custom dataclass without hidden_states",
    fix=f"Load the target's causal-LM class, or wrap it to return logits and hidden states; {ADAPT_HINT}.",
    sources=(REF_TARGET_CALL, REF_FEATURES)
)
