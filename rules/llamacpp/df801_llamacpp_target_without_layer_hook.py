"""DF801: llama.cpp runs the target with DFlash only if its graph fills the layer-input slots."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules.llamacpp._helpers import cite, facts, src, target_arch


def check(ctx: RuleContext):
    arch, how = target_arch(ctx)
    if arch is None or arch in facts(ctx)["layer_hook_architectures"]:
        return
    yield Violation(
        f"llama.cpp runs this target as architecture {quote(arch)} ({how}), whose graph does not fill "
        "t_layer_inp: the first DFlash decode aborts (GGML_ASSERT \"layer input tensor is null\", "
        f"{cite(ctx, 'layer_hook_assert')})",
        [ctx.tloc("model_type", "general.architecture" if ctx.target.gguf else "architectures")],
    )


RULE = Rule(
    code="DF801",
    name="llamacpp-target-without-layer-hook",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="The target's llama.cpp architecture (its GGUF `general.architecture`, or the one "
    "`convert_hf_to_gguf.py` writes for its `architectures`) is one whose graph fills the layer-input slots "
    "DFlash reads (`t_layer_inp`); the list is read from the build's src/models/*.cpp.",
    why="llama.cpp captures the input of each target layer the draft names. Only some model graphs store it; "
    "for any other architecture the slot stays null and the first decode with a DFlash draft aborts the "
    "server with an assertion, after the model has loaded.",
    example="target Qwen3VLForConditionalGeneration (GGUF architecture qwen3vl) with a DFlash draft",
    fix="Serve this pair with an engine that supports the target, or use a target llama.cpp hooks "
    "(e.g. qwen3, qwen35, llama, gemma4, gpt-oss); `dflash-check rule DF801` lists where the list comes from.",
    sources=(src("layer_hook_assert"), src("layer_id_assert", "set_embeddings_layer_inp: the slot requested")),
)
