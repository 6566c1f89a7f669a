"""DF606: the draft's weights carry its own embed_tokens / lm_head (an old revision)."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote

from ._draft_tensors import BUNDLED, weight_shapes


def check(ctx: CheckContext):
    t = ctx.target
    pre, shapes, _ = weight_shapes(ctx.headers)
    found = [n for n in BUNDLED if n in shapes]
    if not found:
        return
    notes = []
    for n in found:
        s = shapes[n]
        if len(s) == 2 and t.vocab_size and (s[0] != t.vocab_size or s[1] != t.hidden_size):
            notes.append(f"{n} is {quote(s)}, the target's table is [{t.vocab_size}, {t.hidden_size}]")
    detail = f" ({'; '.join(notes)}: it was trained with another vocabulary)" if notes else ""
    yield Violation(
        f"the draft weights include {', '.join(found)}; DFlash uses the target's embedding and head, so these are "
        f"ignored by some loaders and rejected as unexpected keys by strict ones{detail}",
        [ctx.tensor_loc(pre + n, ctx.headers.tensor_files.get(pre + n, "model.safetensors")) for n in found],
    )


RULE = Rule(
    code="DF606",
    name="draft-bundles-embeddings",
    severity="warning",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's weights hold no `embed_tokens` / `lm_head` tensors.",
    why="A DFlash draft embeds with the target's input embedding and projects with the target's head; early "
    "revisions shipped copies. Loaders disagree on them (ignored, or `unexpected key`), and a copy of another "
    "model's table reveals a draft trained for a different target.",
    example="draft weights with embed_tokens.weight [151936, 4096] and lm_head.weight [151936, 4096]",
    fix="Use the current revision of the draft (without the copies), or drop the two tensors when re-saving.",
)
