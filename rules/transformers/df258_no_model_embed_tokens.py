"""DF258: the target has no `model.embed_tokens`, the fixed path older z-lab code reads."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT
from dflash_compat.rules._sources import REF_EMBED


def check(ctx: RuleContext):
    p = ctx.tree.paths
    if p is not None and p.embed and p.has_model_embed_tokens is False:
        yield Violation(
            f"the embedding is at {p.embed}, not model.embed_tokens: the dflash package's get_input_embeddings() "
            "path works, older z-lab scripts that read target.model.embed_tokens fail",
            [ctx.module_loc(p.embed)],
        )


RULE = Rule(
    code="DF258",
    name="no-model-embed-tokens",
    severity="info",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="Notes targets whose input embedding is not at `model.embed_tokens` (GPT-2 transformer.wte, GPT-NeoX "
    "gpt_neox.embed_in, Falcon/Bloom transformer.word_embeddings, OPT model.decoder.embed_tokens, VLM wrappers).",
    why="The current reference uses get_input_embeddings(), but older z-lab code and scripts derived from it "
    "read `target.model.embed_tokens` and raise AttributeError on these layouts.",
    example="GPT2LMHeadModel (transformer.wte)",
    fix=f"Use the dflash package >= 0.1 (get_input_embeddings), or {ADAPT_HINT}.",
    sources=(REF_EMBED,)
)
