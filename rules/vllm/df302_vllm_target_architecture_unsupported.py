"""DF302: vLLM cannot capture the auxiliary hidden states of the target's model class."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items


def check(ctx: RuleContext):
    archs = ctx.target.architectures
    if not archs:
        return
    verdict, names = ctx.engine("vllm").target_support(archs)
    if verdict == "supported":
        return
    loc = [ctx.tloc("architectures", "architectures")]
    fallback = ctx.engine("vllm").facts.get("fallback")
    bodies = ctx.engine("vllm").facts.get("aux_body_not_mixin", {})
    hollow = [n for n in names if n in bodies]
    if verdict == "unsupported" and hollow:
        name = hollow[0]
        yield Violation(
            f"vLLM's {quote(name)} declares the EAGLE-3 interface, but its language-model body "
            f"{quote(bodies[name])} is not an EagleModelMixin: vLLM stops at start-up with \"Model instance must "
            "inherit from EagleModelMixin to set auxiliary layers\"",
            loc,
        )
    elif verdict == "unsupported":
        yield Violation(
            f"vLLM's {quote_items(names, raw=True)} does not implement the EAGLE-3 aux-hidden-state interface: vLLM stops with "
            "\"Model does not support EAGLE3 interface\"",
            loc,
        )
    else:
        yield Violation(
            f"target architectures {quote(names)} are not in our list of vLLM classes with the EAGLE-3 aux-hidden-state "
            f"interface ({ctx.engine('vllm').provenance()}); {fallback or 'check the vLLM model class'}",
            loc,
            severity="warning",
        )


RULE = Rule(
    code="DF302",
    name="vllm-target-architecture-unsupported",
    severity="error",
    backends=("vllm",),
    check=check,
    what="The target's class is one vLLM can take auxiliary hidden states from (EAGLE-3 interface). Listed as "
    "unsupported: error; not listed either way: warning. A class that declares the interface but whose "
    "language-model body (the `.model` the interface sets the layers on) is not an `EagleModelMixin` is "
    "unsupported too. The list is data, per vLLM release, in dflash_compat/engines/data/engines/vllm.json.",
    why="vLLM's DFlash proposer gets its context features through the same hook as EAGLE-3; a model class without "
    "it fails at start-up. Not supported in mid-2026: Glm4Moe, Gemma2/3, Mixtral, Qwen2-MoE. vLLM 0.33.0 also "
    "lists Exaone4_5_ForConditionalGeneration, CohereCompassForConditionalGeneration and "
    "Qwen4ExpForConditionalGeneration with the interface, but their text bodies (Exaone4Model, "
    "CohereCompassTextModel, Qwen4ExpModel) are plain modules, so `set_aux_hidden_state_layers` fails its "
    "assertion; the extractor follows the body class to find these.",
    example='target {"architectures": ["MixtralForCausalLM"]}',
    fix="Use a vLLM build whose model class implements SupportsEagle3, try `--model-impl transformers` "
    "(transformers >= 5.2), or serve with another engine.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "28-29", "V2: SupportsEagle3"),
        EngineSource("vllm", "vllm/v1/worker/gpu_model_runner.py", "5173-5177", "V1: SupportsEagle3"),
        EngineSource("vllm", "vllm/model_executor/models/interfaces.py", "1736-1749",
                     "body must be an EagleModelMixin"),
    ),
)
