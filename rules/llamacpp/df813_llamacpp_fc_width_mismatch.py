"""DF813: the draft's fc input width does not match the features the target hands it."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import cite, gguf_loc, llama_layers, src


def check(ctx: RuleContext):
    d = ctx.draft.gguf
    hidden = ctx.target.hidden_size
    layers = llama_layers(ctx)
    if d is None or not is_int(hidden) or not layers:
        return
    shape = d.shape("fc.weight")
    if not shape:
        return
    n = len(layers)
    want = n * hidden
    if shape[0] == want:
        return
    yield Violation(
        f"fc.weight takes {shape[0]} inputs, but the target hands the draft {n} x {hidden} = {want} "
        f"({cite(ctx, 'target_feature_width')}); llama.cpp checks neither side ({cite(ctx, 'fc_tensor')} sizes fc "
        "from the draft's own width), so the graph fails or the draft reads garbage",
        [gguf_loc(ctx, "draft", "fc.weight")],
    )


RULE = Rule(
    code="DF813",
    name="llamacpp-fc-width-mismatch",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF's fc.weight input width (ne[0]) equals len(dflash.target_layers) x the target's hidden size.",
    why="llama.cpp sizes the draft's fc from the draft's own width (n_extract x its n_embd) and the target's "
    "features from the target's (n_extract x its n_embd); nothing compares the two. A draft for a target of "
    "another width loads and fails at the first draft step, or multiplies mismatched features.",
    example="a draft for a 4096-wide target served with a 5120-wide target",
    fix="Use the draft trained for this target.",
    sources=(src("fc_width"), src("fc_tensor"), src("target_feature_width")),
)
