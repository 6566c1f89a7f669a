"""DF002: the target's architectures name no generative (language-model-head) class."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_BIND, REF_EMBED, REF_LOAD, REF_TARGET_CALL
from dflash_compat.specs.target import ENCODER_DECODER_MODEL_TYPES


def check(ctx: RuleContext):
    t = ctx.target
    archs = t.architectures
    if not archs or t.is_causal_lm:
        return
    model_type = t.text_model_type or t.model_type
    if model_type in ENCODER_DECODER_MODEL_TYPES:
        yield Violation(
            f"target model_type {quote(model_type)} is an encoder-decoder model: DFlash drafts condition on, and are "
            "verified by, a decoder-only causal LM",
            [ctx.tloc("model_type", "model_type")],
        )
        return
    yield Violation(
        f"target architectures {quote(archs)} name no *ForCausalLM / *ForConditionalGeneration / *LMHeadModel class: "
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
    "`*LMHeadModel`, or one of transformers' causal-LM classes with another name: `BertGenerationDecoder`, "
    "`ReformerModelWithLMHead`), or its `auto_map` registers one (`AutoModelForCausalLM`), and it is not an encoder-decoder "
    "model (T5, BART, Whisper, ...).",
    why="DFlash drafts project with the target's output head and the target verifies each block by its own logits; "
    "an encoder, embedding or classification checkpoint has no such head, and engines pick the model class by this name.",
    example='target {"architectures": ["Qwen3Model"]} or {"architectures": ["BertForSequenceClassification"]}',
    fix="Point TARGET at the generative checkpoint of the model (the one you serve for chat / completion).",
    sources=(REF_LOAD, REF_TARGET_CALL, REF_EMBED, MLX_BIND),
)
