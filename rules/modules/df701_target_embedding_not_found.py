"""DF701: no input embedding table was found in the target's module tree."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_BIND, REF_EMBED, SGL_EMBED_MODULE, VLLM_SHARE_EMBED, VLLM_V2_SHARE_EMBED


def check(ctx: RuleContext):
    t, m = ctx.target, ctx.tree
    if m.paths is not None and m.paths.embed is None:
        yield Violation(
            f"no input embedding found in {m.model_class or 'the target'}: neither get_input_embeddings() "
            f"nor a {t.vocab_size or 'vocab'}-row nn.Embedding",
            [ctx.module_loc("")],
        )


RULE = Rule(
    code="DF701",
    name="target-embedding-not-found",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="The target's module tree has an input embedding table (via get_input_embeddings(), else an nn.Embedding "
    "with vocab_size rows).",
    why="The draft has no embedding of its own: every engine embeds the block (anchor + mask tokens) with the "
    "target's table.",
    example="a target whose tokens enter through a custom projection module instead of an embedding table",
    fix="Wrap the target in an adapter that exposes its embedding; `dflash-check adapt TARGET -o adapter.py` "
    "generates the shim.",
    sources=(REF_EMBED, MLX_BIND, VLLM_SHARE_EMBED, VLLM_V2_SHARE_EMBED, SGL_EMBED_MODULE),
)
