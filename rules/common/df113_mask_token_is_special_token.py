"""DF113: the mask token id is also the target's EOS, pad or BOS token."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import REF_BLOCK


def _ids(value) -> list[int]:
    items = value if isinstance(value, list) else [value]
    return [i for i in items if isinstance(i, int) and not isinstance(i, bool)]


def check(ctx: RuleContext):
    m, t = ctx.draft.mask_token_id, ctx.target
    if m is None:
        return
    for role, field, ids in (
        ("eos", "eos_token_ids", t.eos_token_ids),
        ("pad", "pad_token_id", _ids(t.pad_token_id)),
        ("bos", "bos_token_id", _ids(t.bos_token_id)),
    ):
        if m in ids:
            key = t.sources.get(f"{field}.{m}") if role == "eos" else None
            yield Violation(
                f"mask_token_id {m} is also the target's {role} token: mask positions look like real "
                f"{role} tokens to the draft",
                [ctx.dloc("mask_token_id"), ctx.tloc(field, key)],
            )


RULE = Rule(
    code="DF113",
    name="mask-token-is-special-token",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="`mask_token_id` is none of the target's EOS / stop ids (config and generation_config.json), "
    "its pad id or its BOS id.",
    why="The mask embedding tells the draft 'unknown position'; reusing an id that also appears as real text "
    "(end of turn, padding) blurs that signal and loses acceptance silently. Published recipes use the "
    "tokenizer's mask token or an unused reserved row.",
    example='target {"eos_token_id": 151645}, draft {"dflash_config": {"mask_token_id": 151645}}',
    fix="If the draft was trained with this id keep it (changing it is worse); otherwise prefer a draft that "
    "uses a reserved token.",
    sources=(REF_BLOCK,),
)
