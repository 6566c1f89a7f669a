"""DF008: the installed transformers cannot build the target from its config."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import REF_LOAD

REASONS = ("unknown-model-type", "build-failed", "no-causal-lm-class")


def check(ctx: RuleContext):
    m = ctx.module_skip
    if m is not None and m.framework == "torch" and m.reason in REASONS:
        yield Violation(
            f"transformers cannot build the target: {m.detail or m.reason}; module checks skipped",
            [ctx.tloc("model_type", key="model_type")],
        )


# transformers' own generate loads the target with from_pretrained too: an unknown model type stops there.
HF_UNKNOWN_TYPE = EngineSource("transformers", "transformers/models/auto/configuration_auto.py", "437-449",
                               "AutoConfig: a model_type missing from CONFIG_MAPPING raises ValueError")


RULE = Rule(
    code="DF008",
    name="target-not-buildable",
    severity="warning",
    backends=("transformers", "dflash"),
    check=check,
    what="The target can be built by the installed transformers from its config (on the meta device, no weights).",
    why="The transformers runtime loads the target with AutoModelForCausalLM / AutoModelForImageTextToText; "
    "a model type it does not know, or a config it rejects, fails there before any drafting.",
    example='target {"model_type": "brand_new_arch"} with a transformers release that predates it',
    fix="Upgrade transformers to a release that supports the model type (or use --trust-remote-code if the repo "
    "ships its own code); vLLM/SGLang/MLX use their own model implementations and may still work.",
    sources=(REF_LOAD, HF_UNKNOWN_TYPE),
)
