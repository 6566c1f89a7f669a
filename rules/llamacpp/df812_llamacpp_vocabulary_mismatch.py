"""DF812: draft and target vocabularies differ, which llama.cpp's DFlash path never checks."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules.llamacpp._helpers import cite, gguf_loc, src

KEY = "tokenizer.ggml.tokens"


def check(ctx: RuleContext):
    d, t = ctx.draft.gguf, ctx.target.gguf
    if d is None or d.vocab_count is None:
        return
    if t is not None and t.vocab_count is not None:
        if t.vocab_count == d.vocab_count and t.vocab_sha256 == d.vocab_sha256:
            return
        what = (f"{d.vocab_count} draft tokens against {t.vocab_count} target tokens" if t.vocab_count !=
                d.vocab_count else f"the same count ({d.vocab_count}) but different tokens")
    elif ctx.target.vocab_size is not None and ctx.target.vocab_size != d.vocab_count:
        what = f"{d.vocab_count} draft tokens against the target's vocab_size {ctx.target.vocab_size}"
    else:
        return
    yield Violation(
        f"draft and target vocabularies differ ({what}): the draft was converted against another tokenizer, and "
        f"llama.cpp compares vocabularies for draft-simple only ({cite(ctx, 'vocab_check_draft_simple')}); it runs "
        "the draft with this target's embeddings and head, so a draft trained for another target drafts tokens "
        "this one rejects, with no error",
        [gguf_loc(ctx, "draft", KEY), gguf_loc(ctx, "target", KEY)],
    )


RULE = Rule(
    code="DF812",
    name="llamacpp-vocabulary-mismatch",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    what="A draft GGUF's tokenizer.ggml.tokens equals the target's (the same tokens in the same order; compared by "
    "count and SHA-256), or its count equals a checkpoint target's vocab_size.",
    why="The converter gives a DFlash draft the vocabulary of the --target-model-dir it was given, so a draft whose "
    "vocabulary differs from the target's was converted against another model. llama.cpp never compares the two "
    "for DFlash and runs the draft with the target's own embeddings and head: the vocabulary metadata itself "
    "changes nothing (measured on the demo pair), but a draft trained for another target proposes tokens this one "
    "rejects, and acceptance collapses silently.",
    example="a draft converted with --target-model-dir Qwen3-8B, served with a Llama-3.1 target GGUF",
    fix="Convert the draft again with --target-model-dir pointing at this target's checkpoint.",
    sources=(src("vocab_check_draft_simple"), src("converter_target_dir")),
)
