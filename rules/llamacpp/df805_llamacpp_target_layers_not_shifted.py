"""DF805: a draft GGUF whose dflash.target_layers look like HF ids written without llama.cpp's + 1."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import cite, draft_is_gguf, gguf_loc, llama_layers, src
from dflash_compat.specs import build_target_layer_ids


def check(ctx: RuleContext):
    layers = llama_layers(ctx)
    if not draft_is_gguf(ctx) or not layers or not all(is_int(x) for x in layers):
        return
    n_layer = ctx.target.num_hidden_layers
    if 0 in layers:
        why = "holds 0, the input of the first layer (the token embeddings), which no DFlash draft is trained on"
    elif is_int(n_layer) and len(layers) > 1 and n_layer > 4 and \
            list(layers) == build_target_layer_ids(n_layer, len(layers)):
        why = (f"equals the reference's default HF ids for {len(layers)} layers of a {n_layer}-layer target, "
               "not those ids + 1")
    else:
        return
    yield Violation(
        f"dflash.target_layers {quote(layers)} {why}: these look like HF target_layer_ids written without "
        f"llama.cpp's + 1, so every feature is read one layer early ({cite(ctx, 'converter_shift')})",
        [gguf_loc(ctx, "draft", "dflash.target_layers")],
    )


RULE = Rule(
    code="DF805",
    name="llamacpp-target-layers-not-shifted",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF's `dflash.target_layers` does not contain 0 (the embedding output, which no DFlash draft "
    "reads) and is not exactly the reference's default HF ids (1 .. N-3, evenly spaced), unshifted.",
    why="llama.cpp captures the input of each layer, so its ids are the HF ids + 1 and the converter adds the 1. "
    "A hand-made or forked GGUF that copies the HF ids loads and runs, but feeds the draft every feature one layer "
    "early: acceptance drops with no error (measured on the demo pair: 5.43 -> 5.04). Only two signs show in the "
    "file: an id of 0 (HF id 0 written as is) or the reference's default HF ids; other unshifted lists look "
    "like valid ones.",
    example="dflash.target_layers = [0, 8, 16, 24, 32] for a draft whose HF ids are [0, 8, 16, 24, 32]",
    fix="Convert the draft with llama.cpp's convert_hf_to_gguf.py --target-model-dir TARGET, or add 1 to every "
    "entry of dflash.target_layers.",
    sources=(src("converter_shift"), src("layer_id_assert", "set_embeddings_layer_inp(lid): lid is a layer input")),
)
