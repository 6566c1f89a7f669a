"""DF603: tensors every DFlash draft layer needs are absent from the draft's weights."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_ATTENTION, MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS, REF_ATTENTION, REF_DRAFT_INIT
from dflash_compat.rules.weights._draft_tensors import (
    expected,
    expected_head,
    layer_index,
    modelled,
    source_name,
    weight_shapes,
)

REF_LAYER = EngineSource("dflash", "dflash/model.py", "423-431", "decoder layer: self_attn, mlp, two layernorms")
MLX_LAYER = EngineSource("dflash", "dflash/model_mlx.py", "210-216", "decoder layer: self_attn, mlp, two layernorms")


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return
    _, shapes, _ = weight_shapes(ctx.headers)
    # Layers absent altogether are DF602's; here: what a present layer (or the draft itself) lacks.
    layers = sorted({i for i in (layer_index(n) for n in shapes) if i is not None and i < d.num_hidden_layers})
    want = {**expected(d, layers), **expected_head(d)}
    missing = [n for n in want if n not in shapes and not n.endswith(".bias")]
    if not missing:
        return
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    yield Violation(
        f"{len(missing)} expected tensor(s) missing from the draft weights: {shown}",
        [ctx.tensor_loc(source_name(ctx.headers, n), "*.safetensors") for n in missing[:3]],
    )


RULE = Rule(
    code="DF603",
    name="draft-tensor-missing",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's weights hold `fc.weight`, `hidden_norm.weight`, `norm.weight` and, per layer, the two "
    "layernorms, q/k/v/o projections, q_norm/k_norm and the gate/up/down MLP projections.",
    why="These are the tensors every DFlash runtime loads by name; one that is absent is either a load error or, "
    "in transformers, a silently random-initialised weight and ~0% acceptance.",
    example="a draft whose header has no `fc.weight` (exported from another speculative method)",
    fix="Use a complete DFlash checkpoint (z-lab layout); re-export or re-download the missing shard.",
    sources=(REF_ATTENTION, REF_LAYER, REF_DRAFT_INIT, MLX_ATTENTION, MLX_LAYER, MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS),
)
