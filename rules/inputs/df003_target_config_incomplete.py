"""DF003: the target's config lacks the sizes the contract is checked against."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_HOOK, REF_EMBED, REF_FEATURES

REQUIRED = ("hidden_size", "num_hidden_layers", "vocab_size")


def check(ctx: RuleContext):
    missing = [f for f in REQUIRED if getattr(ctx.target, f) is None]
    if not missing:
        return
    keys = [ctx.target.key(f) for f in missing]
    yield Violation(
        f"target config has no {', '.join(keys)}: the draft cannot be checked against it",
        [ctx.tloc(f) for f in missing],
    )


RULE = Rule(
    code="DF003",
    name="target-config-incomplete",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The target's (text) config gives `hidden_size`, `num_hidden_layers` and `vocab_size`, under any of "
    "the usual key names (`n_embd`, `n_layer`, `text_config.*`, ...).",
    why="The contract is stated in these three numbers: feature width, valid layer ids, embedding rows for the "
    "mask token. Without them the other rules cannot judge the pairing, so a silent pass would mean nothing.",
    example='target {"architectures": ["FooForCausalLM"], "d_hidden": 4096} (no known hidden-size key)',
    fix="Check that TARGET is the model folder / repo (not a sub-folder), or add the standard keys to its config.json.",
    sources=(REF_FEATURES, REF_EMBED, MLX_HOOK),
)
