"""DF111: the draft does not say which token fills the unknown block positions."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    d = ctx.draft
    if d.mask_token_id is not None:
        return
    key = "mask_token_id" if d.format == "speculators" else "dflash_config.mask_token_id"
    hint = ""
    if ctx.target.mask_token_id is not None:
        hint = f" (the target tokenizer's mask token {quote(ctx.target.mask_token)} is id {ctx.target.mask_token_id})"
    yield Violation(f"draft config has no `{key}`{hint}", [ctx.dloc("mask_token_id", key)])


RULE = Rule(
    code="DF111",
    name="mask-token-missing",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft config gives `dflash_config.mask_token_id` (speculators: top-level `mask_token_id`).",
    why="Every block is `[anchor, mask, mask, ...]`, embedded with the target's table; without the id the draft "
    "cannot build a block, and the id must be the one it was trained with.",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}} (no mask_token_id)',
    fix="Restore the mask token id from the draft's training config (often the tokenizer's mask token or a "
    "reserved row); guessing a different one loses most of the acceptance.",
)
