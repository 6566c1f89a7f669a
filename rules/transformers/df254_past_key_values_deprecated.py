"""DF254: this transformers names the forward's cache argument `cache`; `past_key_values` is only a deprecated alias."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_PKV_ALIAS, REF_TARGET_CALL

HF_DEPRECATION = EngineSource("transformers", "transformers/utils/deprecation.py", "105-171",
                              "deprecate_kwarg: the old keyword is renamed, with a warning until the named version")


def check(ctx: RuleContext):
    m = ctx.tree
    if m.forward is None:
        return
    how = m.forward.how.get("past_key_values")
    alias = m.forward.deprecated_kwargs.get("past_key_values")
    version = m.transformers_version
    cache_arg = m.forward.cache_arg
    loc = [ctx.module_loc("forward")]
    if how == "deprecated-alias":
        until = f", removed in {alias.removed_in}" if alias and alias.removed_in else ""
        yield Violation(
            f"transformers {version}: the target's forward takes `cache=`; `past_key_values=` (what the dflash 0.1 "
            f"reference passes) still works through a deprecation shim{until}, and outputs carry `.cache`",
            loc,
        )
    elif how == "no" and cache_arg == "cache":
        yield Violation(
            f"transformers {version}: the target's forward takes only `cache=`; runtimes passing "
            "`past_key_values=` fail with an unexpected keyword argument",
            loc, severity="error",
        )
    elif how in ("untyped-kwargs", "kwargs-passthrough") and cache_arg == "cache":
        yield Violation(
            f"transformers {version}: the target's forward takes `cache=` and has no `past_key_values` alias; "
            "`past_key_values=` lands in **kwargs and is ignored, so every call starts from an empty cache",
            loc, severity="error",
        )


RULE = Rule(
    code="DF254",
    name="past-key-values-deprecated",
    severity="info",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="Notes that the installed transformers renamed the forward's cache argument from `past_key_values` to "
    "`cache` (found from the forward's signature and its deprecate_kwarg shim); an error once the alias is gone, "
    "or where the model has no alias and `past_key_values=` would vanish into **kwargs.",
    why="transformers 5.x moved to `cache=` / `output.cache`; the alias warns until its removal version, after "
    "which runtimes written for 4.x (and the dflash 0.1 reference) stop working without a code change.",
    example="LlamaForCausalLM.forward(..., cache=...) with @deprecate_kwarg('past_key_values', '5.40.0', new_name='cache')",
    fix="Pass the cache as `cache=` (and read `output.cache`) on transformers 5.x, or pin a transformers version "
    "below the alias' removal.",
    sources=(REF_TARGET_CALL, HF_PKV_ALIAS, HF_DEPRECATION)
)
