"""DF210: the target's forward takes no cache at all, so the dflash reference's cached verify has nothing to
extend or crop."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import REF_CACHE, REF_TARGET_CALL, REF_VERIFY

HF_NO_CACHE_FORWARD = EngineSource(
    "transformers", "transformers/models/openai/modeling_openai.py", "424-437",
    "OpenAIGPTLMHeadModel.forward: no past_key_values / cache parameter, only **kwargs", version="5.25.0")


def check(ctx: RuleContext):
    f = ctx.tree.forward
    if f is None or f.cache_arg is not None or f.how.get("past_key_values") in ("explicit", "deprecated-alias", "kwargs"):
        return
    where = "is swallowed by **kwargs" if f.how.get("past_key_values") != "no" else "is refused"
    yield Violation(
        f"the target's forward ({ctx.tree.model_class}) takes no cache: neither `cache` nor `past_key_values` is a "
        f"parameter, so the model keeps no KV cache. The dflash reference's `past_key_values=` {where} and its "
        f"cache stays empty ({REF_TARGET_CALL.cite()}); cropping that cache to the accepted length then fails "
        f"(transformers: \"Calling `crop` with a positive value is not supported\", {REF_CACHE.cite()})",
        [ctx.module_loc("forward")],
    )


RULE = Rule(
    code="DF210",
    name="target-keeps-no-cache",
    severity="error",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="The target's forward takes a KV cache (`cache` or `past_key_values`, as a parameter, a deprecated alias "
    "or a typed keyword): the dflash reference verifies each block against the cached prefix.",
    why="The reference builds a DynamicCache, passes it as `past_key_values=` on every target call and crops it "
    "to the accepted length after each verify. A model whose forward has no cache parameter (OpenAI GPT: only "
    "**kwargs) ignores it, the cache stays empty, and the first crop of an empty cache raises; smoke's torch "
    "runtime, which mirrors the reference, would have no cache to roll back either. transformers' native path "
    "fails such a model too, on its output (DF206).",
    example="target {\"model_type\": \"openai-gpt\", \"architectures\": [\"OpenAIGPTLMHeadModel\"]} with backend dflash",
    fix="Use a target whose forward keeps a KV cache (every current causal LM in transformers does).",
    sources=(REF_TARGET_CALL, REF_CACHE, REF_VERIFY, HF_NO_CACHE_FORWARD),
)
