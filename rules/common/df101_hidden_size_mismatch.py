"""DF101: the draft's hidden size differs from the target's."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import (
    MLX_DRAFT_INIT,
    REF_DRAFT_INIT,
    REF_EMBED,
    REF_FEATURES,
    SGL_DRAFT_FC,
    VLLM_FC_CHECK,
    VLLM_FC_WIDTH,
)


def check(ctx: RuleContext):
    t, d = ctx.target.hidden_size, ctx.draft.hidden_size
    if t is None or t == d:
        return
    yield Violation(
        f"draft hidden_size {d} != target hidden_size {t}: the draft's fc layer projects "
        f"{d}-wide target features, the target produces {t}-wide ones",
        [ctx.dloc("hidden_size"), ctx.tloc("hidden_size")],
    )


RULE = Rule(
    code="DF101",
    name="hidden-size-mismatch",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft's `hidden_size` equals the target's text hidden size (`text_config.hidden_size` for multimodal wrappers).",
    why="The draft concatenates the target's hidden states and embeds with the target's embedding table; "
    "a different width fails in every engine: a shape error at the first draft step in the dflash reference and "
    "MLX (`mat1 and mat2 shapes cannot be multiplied`), vLLM's feature-width ValueError.",
    example='target {"hidden_size": 4096}, draft {"hidden_size": 2560}',
    fix="Use a draft trained for this target (same hidden size), or train one; a draft cannot be resized.",
    sources=(REF_FEATURES, REF_DRAFT_INIT, REF_EMBED, MLX_DRAFT_INIT, VLLM_FC_WIDTH, VLLM_FC_CHECK, SGL_DRAFT_FC),
)
