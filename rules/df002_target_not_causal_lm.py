"""DF002: the target's architectures name no generative (language-model-head) class."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation


def check(ctx: CheckContext):
    archs = ctx.target.architectures
    if not archs or ctx.target.is_causal_lm:
        return
    yield Violation(
        f"target architectures {archs} name no *ForCausalLM / *ForConditionalGeneration / *LMHeadModel class: "
        "it has no output head to verify drafted tokens with",
        [ctx.tloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF002",
    name="target-not-causal-lm",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The target's `architectures` include a generative class (`*ForCausalLM`, `*ForConditionalGeneration`, "
    "`*LMHeadModel`).",
    why="DFlash drafts project with the target's output head and the target verifies each block by its own logits; "
    "an encoder, embedding or classification checkpoint has no such head, and engines pick the model class by this name.",
    example='target {"architectures": ["Qwen3Model"]} or {"architectures": ["BertForSequenceClassification"]}',
    fix="Point TARGET at the generative checkpoint of the model (the one you serve for chat / completion).",
)
