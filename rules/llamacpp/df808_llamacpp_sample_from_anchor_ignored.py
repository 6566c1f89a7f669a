"""DF808: a DFlash draft trained to sample from the anchor, which llama.cpp's DFlash path ignores."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules.llamacpp._helpers import cite, draft_is_gguf, gguf_loc, src


def check(ctx: RuleContext):
    d = ctx.draft
    if draft_is_gguf(ctx):
        if d.gguf.get("dflash.sample_from_anchor") is True and "markov_w1.weight" not in d.gguf.tensors:
            yield Violation(
                "dflash.sample_from_anchor = true on a plain DFlash draft (no markov_w1.weight): llama.cpp reads it "
                f"for DSpark drafts only and drafts in the standard layout ({cite(ctx, 'block_size_clamp')})",
                [gguf_loc(ctx, "draft", "dflash.sample_from_anchor")],
            )
        return
    if d.sample_from_anchor is True and not d.is_speculators:
        yield Violation(
            f"draft sets {d.key('sample_from_anchor')} = true: llama.cpp's DFlash path drafts in the standard layout "
            f"(the flag is used for DSpark drafts only, {cite(ctx, 'block_size_clamp')}), shifted by one position "
            "from the one the draft was trained in",
            [ctx.dloc("sample_from_anchor")],
        )


RULE = Rule(
    code="DF808",
    name="llamacpp-sample-from-anchor-ignored",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    what="A plain DFlash draft does not ask to sample from the anchor position (`sample_from_anchor: true`).",
    why="llama.cpp defaults sample_from_anchor to true but uses it only for DSpark drafts (a Markov head); a plain "
    "DFlash draft always reads its proposals from the mask positions after the anchor. A draft trained in the "
    "anchor layout then proposes tokens one position off, with no error.",
    example='draft {"dflash_config": {"sample_from_anchor": true}}',
    fix="Use a draft trained in the standard layout for llama.cpp.",
    sources=(src("sample_from_anchor_default"), src("block_size_clamp"), src("draft_block_tokens")),
)
