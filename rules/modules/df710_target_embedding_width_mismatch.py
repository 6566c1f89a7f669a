"""DF710: the target's embedding or head works at another width than its decoder (OPT-350m-style projections)."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_BIND, REF_EMBED


def check(ctx: RuleContext):
    hidden, p = ctx.target.hidden_size, ctx.tree.paths
    if p is None:
        return
    width, takes = p.embed_width, p.head_takes_hidden
    problems = []
    if hidden and isinstance(width, int) and width != hidden:
        problems.append(f"the input embedding {p.embed or ''} gives {width}-wide rows")
    if takes is False:
        problems.append(f"the output head {p.head or ''} does not take {hidden}-wide hidden states")
    if problems:
        yield Violation(
            f"{' and '.join(problems)}, but the decoder works at hidden_size {hidden}: the draft embeds its block "
            "with the embedding and projects its own hidden states with the head, so both must work at the "
            "decoder's width",
            [ctx.module_loc(path) for path in (p.embed, p.head) if path],
        )


RULE = Rule(
    code="DF710",
    name="target-embedding-width-mismatch",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="The target's input embedding returns hidden_size-wide rows and its output head takes hidden_size-wide "
    "states (found by running both on meta tensors).",
    why="Some models embed at a narrower width and project in and out around the decoder (OPT-350m: "
    "word_embed_proj_dim 512, hidden 1024, with project_in / project_out). The draft reads the embedding "
    "rows and calls the head directly, so it gets 512-wide rows where its layers expect 1024: the dflash "
    "package fails with a shape error, and engines that share the embedding do the same.",
    example='target {"model_type": "opt", "hidden_size": 1024, "word_embed_proj_dim": 512}',
    fix="`dflash-check smoke` applies the built-in `opt` adapter by itself: it folds project_in into the embedding "
    "and project_out into the head. For other code, `dflash-check adapt TARGET -o adapter.py` writes a shim that "
    "does the same (check it with `dflash-check TARGET --draft DRAFT --adapter adapter.py`).",
    sources=(REF_EMBED, MLX_BIND),
)
