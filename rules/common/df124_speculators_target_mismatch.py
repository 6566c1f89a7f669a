"""DF124: a speculators-format draft names a verifier that is not this target."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import (
    SPEC_CONVERT,
    VLLM_AUX_CAPTURE,
    VLLM_FC_CHECK,
    VLLM_FC_WIDTH,
    VLLM_LLAMA_CAPTURE,
    VLLM_SPECULATORS,
)

SPEC_VERIFIER = EngineSource("speculators", "speculators/convert/dflash/converter.py", "100-108",
                             "conversion refuses a base model of another hidden_size")
SPEC_RECORD = EngineSource("speculators", "speculators/convert/dflash/converter.py", "128-140",
                           "verifier name_or_path and architectures recorded from the base model")


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    if not d.is_speculators:
        return
    if d.target_hidden_size is not None and t.hidden_size is not None and d.target_hidden_size != t.hidden_size:
        yield Violation(
            f"draft target_hidden_size {d.target_hidden_size} != target hidden_size {t.hidden_size}",
            [ctx.dloc("target_hidden_size"), ctx.tloc("hidden_size")],
        )
    archs = d.verifier_architectures
    if archs and t.architectures and not set(archs) & set(t.architectures):
        name = f" ({quote(d.verifier_name_or_path)})" if d.verifier_name_or_path else ""
        yield Violation(
            f"draft was trained for verifier architectures {quote(archs)}{name}, the target is {quote(t.architectures)}",
            [ctx.dloc("verifier_architectures"), ctx.tloc("architectures", "architectures")],
            severity="warning",
        )


RULE = Rule(
    code="DF124",
    name="speculators-target-mismatch",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="For a speculators-format draft: `target_hidden_size` equals the target's hidden size (error), and "
    "`speculators_config.verifier.architectures` shares a class with the target's (warning).",
    why="speculators records the verifier it was converted or trained against. vLLM sizes the draft's fc from "
    "`target_hidden_size` and raises a feature-width ValueError when the target's states are wider or narrower; "
    "another architecture usually means another model whose hidden states the draft has never seen. "
    "(`aux_hidden_state_layer_ids` are z-lab ids + 1: vLLM captures them as given, after layer id - 1, and derives "
    "dflash_config.target_layer_ids = aux - 1; there is no second shift, and dflash-check reads them the same way.)",
    example='draft {"speculators_model_type": "dflash", "target_hidden_size": 5120}, target {"hidden_size": 4096}',
    fix="Use the draft trained for this target (its verifier.name_or_path says which model that was).",
    sources=(VLLM_SPECULATORS, VLLM_FC_WIDTH, VLLM_FC_CHECK, VLLM_LLAMA_CAPTURE, VLLM_AUX_CAPTURE, SPEC_CONVERT,
             SPEC_VERIFIER, SPEC_RECORD),
)
