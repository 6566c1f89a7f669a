"""DF256: the cache the target builds has recurrent layers that the config did not reveal."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import (
    HF_LINEAR_CROP,
    HF_ROLLBACK_CROP,
    REF_CACHE,
    REF_VERIFY,
    SGL_HYBRID,
    VLLM_HYBRID,
)


def check(ctx: RuleContext):
    t, cache, p = ctx.target, ctx.tree.cache, ctx.tree.paths
    bad = list(cache.non_croppable) if cache else []
    # DF201 reports targets the config already shows as hybrid; this one covers the rest.
    if not bad or t.is_hybrid:
        return
    kinds = sorted({cache.layers[i] for i in bad if cache.layers and i < len(cache.layers)}) or [
        cache.cache_class or "model-managed state"]
    layers = p.layers if p else None
    yield Violation(
        f"{len(bad)} of the target's layers keep state that cropping cannot roll back ({', '.join(kinds)}): "
        "rejected draft tokens stay in it, so the output is not lossless",
        [ctx.module_loc(f"{layers}.{bad[0]}" if layers else "cache")],
    )


RULE = Rule(
    code="DF256",
    name="cache-layers-not-croppable",
    severity="error",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="Every layer of the cache the target builds (DynamicCache(config=...) or the model's own) can be rolled "
    "back by crop: no recurrent / SSM / linear-attention state. Complements DF201, which judges from the config.",
    why="The dflash reference crops the target cache to the accepted length after each verify step; transformers' "
    "linear-attention cache layers then cut only their convolution state, while the recurrent state has already "
    "absorbed the rejected tokens, so later tokens differ from the target's own output.",
    example="a model type not known as hybrid whose cache is built from LinearAttentionLayer entries",
    fix="Serve this target with an engine that rolls recurrent state back (vLLM; SGLang, whose DFLASH worker "
    "commits the accepted state itself), or use a pure-attention target.",
    sources=(REF_CACHE, REF_VERIFY, HF_LINEAR_CROP, HF_ROLLBACK_CROP, VLLM_HYBRID, SGL_HYBRID),
)
