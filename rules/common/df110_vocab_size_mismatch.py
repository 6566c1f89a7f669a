"""DF110: the draft's vocabulary size differs from the target's."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_BIND, REF_EMBED, REF_V2


def check(ctx: RuleContext):
    t, d = ctx.target.vocab_size, ctx.draft.vocab_size
    if t is None or d is None or t == d:
        return
    yield Violation(
        f"draft vocab_size {d} != target vocab_size {t}: the draft predicts over the target's embedding rows",
        [ctx.dloc("vocab_size"), ctx.tloc("vocab_size")],
    )


RULE = Rule(
    code="DF110",
    name="vocab-size-mismatch",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft's `vocab_size` equals the target's (embedding rows, `text_config.vocab_size` for VLMs).",
    why="The draft embeds with the target's embedding table and projects with its output head, so its logits are "
    "over the target's vocabulary; a different size means another tokenizer, and DFlash 2's selector codebooks "
    "(`vocab x rank`, sized from the draft's vocab_size) cannot be indexed with the target's token ids.",
    example='target {"vocab_size": 152064}, draft {"vocab_size": 151936}',
    fix="Use a draft trained for this target's tokenizer; a draft's vocabulary cannot be remapped.",
    sources=(REF_EMBED, REF_V2, MLX_BIND),
)
