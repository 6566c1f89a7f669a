"""DF703: the target's decoder layers were not found, or their number differs from the config."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_HOOK, REF_FEATURES, VLLM_LLAMA_CAPTURE


def check(ctx: RuleContext):
    t, m = ctx.target, ctx.tree
    p = m.paths
    if p is None:
        return
    if p.layers is None:
        yield Violation(
            f"no decoder-layer list found in {m.model_class or 'the target'} (no ModuleList of "
            f"{p.config_layers or t.num_hidden_layers} layers)",
            [ctx.module_loc("")],
        )
        return
    built, cfg = p.layers_len, p.config_layers or t.num_hidden_layers
    if built is not None and cfg is not None and built != cfg:
        yield Violation(
            f"{p.layers} holds {built} layers, the config says {cfg}: layer ids count the built layers",
            [ctx.module_loc(p.layers), ctx.tloc("num_hidden_layers")],
            severity="warning",
        )


RULE = Rule(
    code="DF703",
    name="target-layers-not-found",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="The target's module tree has one list of decoder layers (e.g. model.layers, transformer.h, "
    "model.language_model.layers) holding num_hidden_layers layers.",
    why="`target_layer_ids` index that list: engines capture the hidden state after each listed layer. Without "
    "it no features can be captured; with a different length the ids point at other layers.",
    example="a model whose blocks live in two lists (encoder and decoder) or in a dict",
    fix="Expose the decoder layers as one list; `dflash-check adapt TARGET -o adapter.py` generates a shim.",
    sources=(REF_FEATURES, MLX_HOOK, VLLM_LLAMA_CAPTURE),
)
