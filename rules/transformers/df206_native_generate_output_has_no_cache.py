"""DF206: transformers' native DFlash generation reads the cache back from the target's output; this output has none."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

# Both releases read the cache from the verify forward's output (the line numbers are 5.24.0's, 5.25.0 +5).
HF_OUTPUT_CACHE = EngineSource("transformers", "transformers/generation/utils.py", "4098",
                               "_assisted_decoding: outputs.cache.is_croppable after the prefill")
HF_OUTPUT_CROP = EngineSource("transformers", "transformers/generation/utils.py", "4182",
                              "_assisted_decoding: outputs.cache.crop(-n) after each verify")


def check(ctx: RuleContext):
    fwd = ctx.tree.forward
    if fwd is None or fwd.output_class is None or not fwd.output_fields:
        return
    if "cache" in fwd.output_fields:
        return
    yield Violation(
        f"{ctx.tree.model_class}.forward returns {fwd.output_class}, which has no `cache` field: transformers' "
        "generate(speculation_type=\"dflash\") reads outputs.cache after the prefill and crops it after every "
        "verify step, so it stops with AttributeError",
        [ctx.module_loc("forward")],
    )


RULE = Rule(
    code="DF206",
    name="native-generate-output-has-no-cache",
    severity="error",
    backends=("transformers",),
    needs=("torch-modules",),
    # 5.22 and 5.23 read outputs.past_key_values there instead (generation/utils.py:4161 / :4168): the `cache`
    # field this rule asks for is what 5.24.0 and later read
    versions={"transformers": ">=5.24.0"},
    check=check,
    what="The target's forward returns an output type (from its return annotation) with a `cache` field, which "
    "transformers' own assisted / DFlash decoding reads back after each forward.",
    why="transformers' _assisted_decoding checks `outputs.cache.is_croppable` after the prefill and calls "
    "`outputs.cache.crop(-n)` after every verify step (transformers 5.24.0 generation/utils.py:4098, 4182). A "
    "masked-LM style head (XLM's XLMWithLMHeadModel returns MaskedLMOutput) has no such field: plain greedy "
    "generate() runs, DFlash generation raises AttributeError on the first step.",
    example="target {\"model_type\": \"xlm\"} (XLMWithLMHeadModel -> MaskedLMOutput)",
    fix="Use a target whose causal-LM class returns its cache (CausalLMOutputWithPast), or run the pair with the "
    "dflash reference (backend `dflash`), which keeps its own cache object.",
    sources=(HF_OUTPUT_CACHE, HF_OUTPUT_CROP),
)
