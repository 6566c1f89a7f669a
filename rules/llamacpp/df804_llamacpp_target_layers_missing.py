"""DF804: the draft GGUF has (or will have) no dflash.target_layers, and llama.cpp refuses it."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules.llamacpp._helpers import CONVERT, cite, draft_is_gguf, gguf_loc, llama_layers, src


def check(ctx: RuleContext):
    if llama_layers(ctx) is not None:
        return
    if draft_is_gguf(ctx):
        yield Violation(
            "the draft GGUF has no dflash.target_layers: llama.cpp refuses to load it (\"DFlash model requires "
            f"'target_layers' in GGUF metadata\", {cite(ctx, 'target_layers_required')})",
            [gguf_loc(ctx, "draft", "dflash.target_layers")],
        )
        return
    d = ctx.draft
    why = "guesses them from num_target_layers" if d.target_layer_ids_guessed else "has none"
    yield Violation(
        f"the draft config {why}, and {CONVERT} writes dflash.target_layers only from explicit "
        "target_layer_ids: the converted draft fails to load (\"DFlash model requires 'target_layers'\", "
        f"{cite(ctx, 'target_layers_required')})",
        [ctx.dloc("target_layer_ids", "dflash_config.target_layer_ids")],
    )


RULE = Rule(
    code="DF804",
    name="llamacpp-target-layers-missing",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF holds `dflash.target_layers`; a checkpoint names its target_layer_ids explicitly, so the "
    "converter writes them.",
    why="llama.cpp has no default layer ids: the draft fails to load without the key. The converter writes it only "
    "when the HF config lists target_layer_ids (dflash_config first, then the top level); a draft that relies on "
    "num_target_layers and the reference's formula converts without it.",
    example='draft {"num_target_layers": 36, "dflash_config": {"mask_token_id": 151669}}',
    fix="Write the ids into the draft's config (dflash_config.target_layer_ids) before converting, or add the key "
    "to the GGUF (llama.cpp's ids are the HF ids + 1).",
    sources=(src("target_layers_required"), src("converter_target_layers_optional")),
)
