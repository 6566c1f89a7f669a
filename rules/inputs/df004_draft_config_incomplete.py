"""DF004: the draft's config lacks fields needed to build the draft model."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_DRAFT, REF_ATTENTION, REF_DRAFT_INIT

REQUIRED = ("vocab_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "rms_norm_eps")


def check(ctx: RuleContext):
    d = ctx.draft
    # A family whose loaders take a value from elsewhere (the Muse-Glimmer assistant's vocabulary) lacks nothing.
    inherited = {i.field for i in d.inherited}
    missing = [f for f in REQUIRED if getattr(d, f) is None and f not in inherited]
    if not missing:
        return
    prefix = "transformer_layer_config." if d.is_speculators else ""
    keys = [d.sources.get(f, prefix + f) for f in missing]
    yield Violation(
        f"draft config has no {', '.join(keys)}: the draft model cannot be built from it",
        [ctx.dloc(f, key) for f, key in zip(missing, keys)],
    )


RULE = Rule(
    code="DF004",
    name="draft-config-incomplete",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft's config gives the Qwen3 fields the loaders build it from: `vocab_size`, `num_attention_heads`, "
    "`num_key_value_heads`, `intermediate_size`, `rms_norm_eps`.",
    why="Engines construct the draft's attention and MLP from these; a missing one either fails at load "
    "(the MLX loader indexes them as required keys) or, in the dflash reference, silently takes a Qwen3Config "
    "default that does not match the weights.",
    example='draft {"architectures": ["DFlashDraftModel"], "hidden_size": 4096, "num_hidden_layers": 5} and nothing else',
    fix="Restore the draft's full config.json from its original repository.",
    sources=(REF_ATTENTION, REF_DRAFT_INIT, MLX_LOAD_DRAFT),
)
