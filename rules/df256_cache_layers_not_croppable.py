"""DF256: the cache the target builds has recurrent layers that the config did not reveal."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation

from ._modules import deep


def check(ctx: CheckContext):
    t = ctx.target
    bad = deep(ctx, "non_croppable_layers") or []
    # DF201 reports targets the config already shows as hybrid; this one covers the rest.
    if not bad or t.is_hybrid:
        return
    kinds = sorted({t.cache_layers[i] for i in bad if t.cache_layers and i < len(t.cache_layers)}) or [
        deep(ctx, "cache_class") or "model-managed state"]
    yield Violation(
        f"{len(bad)} of the target's layers keep state that cropping cannot roll back ({', '.join(kinds)}): "
        "rejected draft tokens stay in it, so the output is not lossless",
        [ctx.module_loc(f"{t.layers_path}.{bad[0]}" if t.layers_path else "cache")],
    )


RULE = Rule(
    code="DF256",
    name="cache-layers-not-croppable",
    severity="error",
    backends=("transformers",),
    needs=("modules",),
    check=check,
    what="Every layer of the cache the target builds (DynamicCache(config=...) or the model's own) can be rolled "
    "back by crop: no recurrent / SSM / linear-attention state. Complements DF201, which judges from the config.",
    why="The reference crops the target cache to the accepted length after each verify step; a recurrent state "
    "has already absorbed the rejected tokens, so later tokens differ from the target's own output.",
    example="a model type not known as hybrid whose cache is built from LinearAttentionLayer entries",
    fix="Serve this target with an engine that rolls back recurrent state (vLLM; SGLang, whose DFLASH worker "
    "commits the accepted state itself, no flag needed), or use a pure-attention target.",
)
