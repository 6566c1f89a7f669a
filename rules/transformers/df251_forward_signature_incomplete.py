"""DF251: the target's forward does not accept an argument the transformers reference passes."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT
from dflash_compat.rules._sources import REF_TARGET_CALL, REF_VERIFY

# What the reference passes besides the cache (the cache keyword is DF254's).
NEEDED = ("input_ids", "position_ids", "use_cache", "logits_to_keep", "output_hidden_states")


def check(ctx: RuleContext):
    m = ctx.tree
    how = m.forward.how if m.forward else {}
    missing = [n for n in NEEDED if how.get(n) == "no"]
    if not missing:
        return
    yield Violation(
        f"{m.model_class}.forward takes no {', '.join(missing)} (and no **kwargs): the reference "
        "runtime's call raises TypeError",
        [ctx.module_loc("forward")],
    )


RULE = Rule(
    code="DF251",
    name="forward-signature-incomplete",
    severity="error",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="The target's forward accepts `input_ids`, `position_ids`, `use_cache`, `logits_to_keep` and "
    "`output_hidden_states` (as parameters or through **kwargs), read from its signature.",
    why="The reference calls `target(ids, position_ids=..., past_key_values=cache, use_cache=True, "
    "logits_to_keep=1, output_hidden_states=True)`; a forward without one of them fails with an unexpected "
    "keyword argument.",
    example="a remote-code model whose forward(input_ids, attention_mask) has no **kwargs",
    fix=f"Wrap the target so its forward takes these keywords; {ADAPT_HINT}.",
    sources=(REF_TARGET_CALL, REF_VERIFY)
)
