"""DF802: llama.cpp's converter has no class for the target's architecture."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote_items
from dflash_compat.rules.llamacpp._helpers import CONVERT, entry_src, target_arch


def check(ctx: RuleContext):
    t = ctx.target
    if t.gguf is not None or not t.architectures:
        return
    arch, _ = target_arch(ctx)
    if arch is not None:
        return
    yield Violation(
        f"{CONVERT} registers no converter for {quote_items(t.architectures)}: the target cannot be "
        "converted to GGUF, so llama.cpp cannot serve it",
        [ctx.tloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF802",
    name="llamacpp-target-not-convertible",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A safetensors target's `architectures` names a class `convert_hf_to_gguf.py` registers (the map of "
    "HF classes to GGUF architectures is read from the build's conversion/*.py).",
    why="llama.cpp serves GGUF files only. A checkpoint whose class the converter does not know stops the "
    "conversion (\"Model X is not supported\") before anything can be served.",
    example='target {"architectures": ["MyNewForCausalLM"]}',
    fix="Use a GGUF of the target made by its publisher, or an engine that loads the checkpoint.",
    sources=(entry_src("converter_architectures", "Qwen3ForCausalLM"),),
)
