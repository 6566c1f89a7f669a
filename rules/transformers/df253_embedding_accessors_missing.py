"""DF253: get_input_embeddings() / lm_head / get_output_embeddings() do not give the modules the reference needs."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT
from dflash_compat.rules._sources import HF_NATIVE_SETUP, REF_EMBED


def check(ctx: RuleContext):
    p = ctx.tree.paths
    if p is None:
        return
    problems, locs = [], []
    if p.embed and p.embed_via == "search":
        problems.append(f"get_input_embeddings() does not return the embedding (found at {p.embed} by search)")
        locs.append(ctx.module_loc(p.embed))
    if p.head and p.head_via == "search":
        problems.append(f"there is no `lm_head` and get_output_embeddings() is None (head found at {p.head})")
        locs.append(ctx.module_loc(p.head))
    if problems:
        yield Violation("; ".join(problems), locs)


RULE = Rule(
    code="DF253",
    name="embedding-accessors-missing",
    severity="error",
    backends=("dflash",),
    needs=("torch-modules",),
    check=check,
    what="`target.get_input_embeddings()` returns the input embedding and `target.lm_head` or "
    "`target.get_output_embeddings()` the output head.",
    why="The transformers reference embeds the block with `get_input_embeddings().weight` and projects with "
    "`lm_head`, else `get_output_embeddings()`; when these return None or raise, drafting fails before the first "
    "block.",
    example="a custom model that never overrides get_input_embeddings()",
    fix=f"Implement the accessors in an adapter; {ADAPT_HINT}.",
    sources=(REF_EMBED, HF_NATIVE_SETUP)
)
