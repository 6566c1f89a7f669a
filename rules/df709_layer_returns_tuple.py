"""DF709: the target's decoder layers return a tuple, which layer hooks must unwrap."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation

from ._modules import ADAPT_HINT


def check(ctx: CheckContext):
    m = ctx.tree
    returns, layers = m.layer_returns, m.paths.layers if m.paths else None
    if returns is None or returns.kind != "tuple":
        return
    classes = [c for c, k in returns.by_class.items() if k == "tuple"]
    yield Violation(
        f"{layers} layers ({', '.join(classes) or 'decoder layers'}) return a tuple, not the hidden-state "
        "tensor: a runtime that captures features by wrapping layers must take element 0",
        [ctx.module_loc(f"{layers}.0" if layers else "")],
        severity="warning" if m.framework == "mlx" else None,
    )


RULE = Rule(
    code="DF709",
    name="layer-returns-tuple",
    severity="info",
    backends=("transformers", "mlx"),
    needs=("modules",),
    check=check,
    what="Notes decoder layers whose forward returns a tuple (hidden states plus attention weights or cache) "
    "instead of a tensor, found from the forward's return statements without running it.",
    why="transformers' own output_hidden_states handles tuples, but runtimes that hook layers to capture the "
    "context features (the MLX port, custom loops, adapters) store whatever the layer returns; a tuple there "
    "breaks the concatenation of features. A warning when the facts come from an MLX tree.",
    example="FalconDecoderLayer.forward returning (output, attn_weights)",
    fix=f"Capture `out[0] if isinstance(out, tuple) else out`; {ADAPT_HINT}.",
)
