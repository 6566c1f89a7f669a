"""DF709: the target's decoder layers return a tuple, which layer hooks must unwrap."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT
from dflash_compat.rules._sources import MLX_HOOK, REF_FEATURES

HF_LAYER_HOOK = EngineSource("transformers", "transformers/utils/output_capturing.py", "131-145",
                             "output_hidden_states hooks keep output[index] of a tuple (0 for decoder layers)")


def check(ctx: RuleContext):
    m = ctx.tree
    returns, layers = m.layer_returns, m.paths.layers if m.paths else None
    if returns is None or returns.kind != "tuple":
        return
    classes = [c for c, k in returns.by_class.items() if k == "tuple"]
    yield Violation(
        f"{layers} layers ({', '.join(classes) or 'decoder layers'}) return a tuple, not the hidden-state "
        "tensor: the dflash reference and MLX port handle that, custom code that hooks layers must take element 0",
        [ctx.module_loc(f"{layers}.0" if layers else "")],
    )


RULE = Rule(
    code="DF709",
    name="layer-returns-tuple",
    severity="info",
    backends=("dflash", "mlx"),
    needs=("modules",),
    check=check,
    what="Notes decoder layers whose forward returns a tuple (hidden states plus attention weights or cache) "
    "instead of a tensor, found from the forward's return statements without running it.",
    why="Neither dflash 0.1.0 path is affected: the transformers reference reads output_hidden_states, whose hooks "
    "keep a tuple's first element, and the MLX port's layer hook stores `out[0]` of a tuple. Older MLX ports, "
    "custom loops and adapters that wrap layers to capture the context features store whatever the layer returns; "
    "a tuple there breaks the concatenation of features.",
    example="FalconDecoderLayer.forward returning (output, attn_weights)",
    fix=f"Nothing for the dflash package; in your own capture code take `out[0] if isinstance(out, tuple) else out`; "
    f"{ADAPT_HINT}.",
    sources=(REF_FEATURES, HF_LAYER_HOOK, MLX_HOOK),
)
