"""DF609: the draft's weights hold tensors no DFlash loader knows."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_LOAD
from dflash_compat.rules.weights._draft_tensors import known, modelled, source_name, weight_shapes


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return
    _, shapes, _ = weight_shapes(ctx.headers)
    odd = sorted(n for n in shapes if not known(d, n))
    if not odd:
        return
    shown = ", ".join(odd[:5]) + (f" and {len(odd) - 5} more" if len(odd) > 5 else "")
    yield Violation(
        f"{len(odd)} tensor(s) no DFlash loader reads: {shown}",
        [ctx.tensor_loc(source_name(ctx.headers, n), ctx.headers.tensor_files.get(source_name(ctx.headers, n), "model.safetensors"))
         for n in odd[:3]],
    )


RULE = Rule(
    code="DF609",
    name="draft-unexpected-tensors",
    severity="warning",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="Every tensor in the draft's weights is one a z-lab DFlash loader reads (v1 layout, v2 additions, "
    "quantisation companions, the bundled embeddings of old revisions).",
    why="Unknown names usually mean a checkpoint of another method (EAGLE, Medusa) or another layout under a "
    "DFlash config; engines ignore them with a warning or refuse to load, and the draft is then incomplete.",
    example="draft weights holding midlayer.self_attn.q_proj.weight (an EAGLE-3 head)",
    fix="Use a DFlash checkpoint in the z-lab layout, or convert the names before loading.",
    sources=(REF_LOAD, MLX_LOAD_WEIGHTS),
)
