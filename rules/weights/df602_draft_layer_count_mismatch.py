"""DF602: the draft's weights hold a different set of decoder layers than its config's num_hidden_layers."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS, REF_DRAFT_INIT
from dflash_compat.rules.weights._draft_tensors import layer_index, modelled, weight_shapes


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return
    _, shapes, _ = weight_shapes(ctx.headers)
    present = sorted({i for i in (layer_index(n) for n in shapes) if i is not None})
    want = list(range(d.num_hidden_layers))
    if present == want:
        return
    have = set(present)
    missing = [i for i in want if i not in have]
    extra = [i for i in present if i >= d.num_hidden_layers]
    parts = []
    if missing:
        parts.append(f"layer(s) {quote(missing)} missing")
    if extra:
        parts.append(f"layer(s) {quote(extra)} beyond the config's {d.num_hidden_layers}")
    yield Violation(
        f"the weights hold {len(present)} decoder layer(s) {quote(present)}, "
        f"num_hidden_layers is {d.num_hidden_layers}: {', '.join(parts)}",
        [ctx.dloc("num_hidden_layers"), ctx.tensor_loc(f"layers.{(missing or extra)[0]}.*", "*.safetensors")],
    )


RULE = Rule(
    code="DF602",
    name="draft-layer-count-mismatch",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The safetensors headers hold exactly the decoder layers `layers.0 .. layers.{num_hidden_layers-1}`.",
    why="A missing layer is left randomly initialised by transformers (a warning nobody reads) and rejected by "
    "strict loaders; extra layers mean the config belongs to another checkpoint. Either way acceptance collapses.",
    example='draft {"num_hidden_layers": 5} whose weights hold layers.0 .. layers.3',
    fix="Re-download the checkpoint (a shard may be missing) or correct num_hidden_layers to match the weights.",
    sources=(REF_DRAFT_INIT, MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS),
)
