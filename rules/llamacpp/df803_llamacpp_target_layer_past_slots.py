"""DF803: a draft layer llama.cpp reads past the last slot the target's graph fills."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import cite, draft_is_gguf, facts, gguf_loc, llama_layers, src, target_arch


def check(ctx: RuleContext):
    layers = llama_layers(ctx)
    n_layer = ctx.target.num_hidden_layers
    if not layers or not is_int(n_layer):
        return
    ints = [x for x in layers if is_int(x)]
    where = "dflash.target_layers" if draft_is_gguf(ctx) else "the converted dflash.target_layers (ids + 1)"
    loc = gguf_loc(ctx, "draft", "dflash.target_layers") if draft_is_gguf(ctx) else ctx.dloc("target_layer_ids")
    beyond = [x for x in ints if x > n_layer or x < 0]
    if beyond:
        yield Violation(
            f"{where} {quote(layers)} holds {quote(beyond)}, outside 0..{n_layer} for a target of {n_layer} layers: "
            f"llama.cpp aborts when the draft is attached (GGML_ASSERT lid <= n_layer, "
            f"{cite(ctx, 'layer_id_assert')})",
            [loc],
        )
        return
    arch, _ = target_arch(ctx)
    if n_layer in ints and arch is not None and arch in facts(ctx)["layer_hook_architectures"] and \
            arch not in facts(ctx)["last_layer_slot_architectures"]:
        yield Violation(
            f"{where} {quote(layers)} asks for slot {n_layer} (the output of the last layer), which the {arch} graph "
            f"never fills: the first decode aborts (\"layer input tensor is null\", {cite(ctx, 'layer_hook_assert')})",
            [loc],
        )


RULE = Rule(
    code="DF803",
    name="llamacpp-target-layer-past-slots",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="Every `dflash.target_layers` entry llama.cpp reads (the GGUF's, or a checkpoint's target_layer_ids + 1 "
    "as the converter writes them) is a layer input the target's graph fills: 0..n_layer-1, and n_layer only for "
    "architectures that also fill the slot after the last layer.",
    why="llama.cpp counts layer inputs, not outputs: HF id i is slot i + 1, so the last layer's output (HF id "
    "n_layer - 1) is slot n_layer. Only a few graphs fill that slot (read from the build's sources); for the others "
    "the first decode aborts, and a slot past n_layer aborts as soon as the draft is attached.",
    example="a 36-layer qwen3 target with a draft whose target_layer_ids end in 35",
    fix="Use a draft trained on earlier layers (the z-lab drafts stop at N-3), or a target whose graph fills the "
    "last slot.",
    sources=(src("layer_id_assert"), src("layer_hook_assert"), src("converter_shift")),
)
