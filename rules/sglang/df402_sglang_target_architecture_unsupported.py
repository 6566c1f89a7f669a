"""DF402: SGLang cannot capture DFlash layers from the target's model class."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items


def check(ctx: RuleContext):
    archs = ctx.target.architectures
    if not archs:
        return
    verdict, names = ctx.engine("sglang").target_support(archs)
    if verdict == "supported":
        return
    loc = [ctx.tloc("architectures", "architectures")]
    delegated = ctx.engine("sglang").facts.get("hook_delegated_to_missing", {})
    if verdict == "unsupported" and names[0] in delegated:  # the class has the hook; the part it calls has none
        yield Violation(
            f"SGLang's {names[0]} hands set_dflash_layers_to_capture to its language model, a "
            f"{delegated[names[0]]}, which has none: SGLang stops at start-up with AttributeError",
            loc,
        )
    elif verdict == "unsupported":
        yield Violation(
            f"SGLang's {quote_items(names, raw=True)} has no set_dflash_layers_to_capture: SGLang stops at start-up (\"Model ... "
            "implements neither set_dspark_layers_to_capture nor set_dflash_layers_to_capture\")",
            loc,
        )
    else:
        yield Violation(
            f"target architectures {quote(names)} are not in our list of SGLang classes with set_dflash_layers_to_capture "
            f"({ctx.engine('sglang').provenance()}); check the SGLang model class",
            loc,
            severity="warning",
        )


RULE = Rule(
    code="DF402",
    name="sglang-target-architecture-unsupported",
    severity="error",
    backends=("sglang",),
    check=check,
    what="The target's class is one SGLang can capture DFlash layers from (`set_dflash_layers_to_capture`). "
    "Listed as unsupported: error; not listed either way: warning. The list is data, in "
    "dflash_compat/engines/data/engines/sglang.json (per SGLang release).",
    why="SGLang asks the target model class (the EntryClass its registry maps the architecture to) to capture the "
    "chosen layers' hidden states through `set_dflash_layers_to_capture`; a class without it, in its own body or a "
    "base, cannot serve a DFlash draft: SGLang stops at start-up.",
    example='target {"architectures": ["Qwen2ForCausalLM"]}',
    fix="Use an SGLang build whose model class implements set_dflash_layers_to_capture, or serve with another engine.",
    sources=(
        EngineSource("sglang", "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py",
                     "62-72", "no set_dflash_layers_to_capture: start-up error"),
        EngineSource("sglang", "sglang/srt/models/qwen3_vl.py", "1680-1688", "the VL wrapper's hook calls "
                     "self.model's; the dense body Qwen3LLMModel (:1169) has none: AttributeError"),
    ),
)
