"""DF805: a draft GGUF whose dflash.target_layers look like HF ids written without llama.cpp's + 1."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote

from ._llamacpp import draft_is_gguf, gguf_loc, llama_layers, src


def check(ctx: CheckContext):
    layers = llama_layers(ctx)
    if not draft_is_gguf(ctx) or not layers or 0 not in layers:
        return
    yield Violation(
        f"dflash.target_layers {quote(layers)} holds 0, the input of the first layer (the token embeddings): no "
        "DFlash draft is trained on it, so these look like HF target_layer_ids written without llama.cpp's + 1; "
        f"every feature is then read one layer early ({src('converter_shift').cite()})",
        [gguf_loc(ctx, "draft", "dflash.target_layers")],
    )


RULE = Rule(
    code="DF805",
    name="llamacpp-target-layers-not-shifted",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF's `dflash.target_layers` does not contain 0 (the embedding output, which no DFlash draft "
    "reads).",
    why="llama.cpp captures the input of each layer, so its ids are the HF ids + 1 and the converter adds the 1. "
    "A hand-made or forked GGUF that copies the HF ids loads and runs, but feeds the draft every feature one layer "
    "early: acceptance drops with no error. An id of 0 is the telltale sign (HF id 0 written as is).",
    example="dflash.target_layers = [0, 8, 16, 24, 32] for a draft whose HF ids are [0, 8, 16, 24, 32]",
    fix="Convert the draft with llama.cpp's convert_hf_to_gguf.py --target-model-dir TARGET, or add 1 to every "
    "entry of dflash.target_layers.",
    sources=(src("converter_shift"), src("layer_id_assert", "set_embeddings_layer_inp(lid): lid is a layer input")),
)
