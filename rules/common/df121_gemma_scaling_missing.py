"""DF121: the target scales embeddings or logits and the draft config does not do the same."""

from __future__ import annotations

import math

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._common import READ_BY
from dflash_compat.rules._sources import (
    HF_NATIVE_LOGITS,
    HF_SCALED_EMBED,
    MLX_SCALES,
    REF_BLOCK,
    REF_DRAFT_VALUE,
    REF_LOGITS,
    SGL_V2_LOGITS,
    VLLM_BEAM_SOFTCAP,
    VLLM_V1_LOGITS,
    VLLM_V2_EMBED,
    VLLM_V2_LOGITS,
)


def _differs(a, b) -> bool:
    return not math.isclose(float(a), float(b), rel_tol=1e-3)


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    # (what the target does, the draft field that must mirror it, the value it should have, target field)
    needs = []
    if t.scales_embeddings and t.hidden_size is not None:
        needs.append(("multiplies embeddings by sqrt(hidden_size)", "input_embedding_scale",
                      math.sqrt(t.hidden_size), "hidden_size"))
    if t.embedding_multiplier is not None and t.embedding_multiplier != 1:
        needs.append((f"multiplies embeddings by embedding_multiplier {t.embedding_multiplier:g}",
                      "input_embedding_scale", float(t.embedding_multiplier), "embedding_multiplier"))
    if t.logits_scaling not in (None, 0, 1):  # 0 is not a scale a model can use: nothing to mirror
        needs.append((f"divides logits by logits_scaling {t.logits_scaling:g}", "output_multiplier",
                      1.0 / float(t.logits_scaling), "logits_scaling"))
    if t.final_logit_softcapping is not None:
        needs.append((f"soft-caps logits at {t.final_logit_softcapping:g}", "final_logit_softcapping",
                      float(t.final_logit_softcapping), "final_logit_softcapping"))
    for doing, field, expected, tfield in needs:
        if d.format not in READ_BY[field]:
            continue
        have = getattr(d, field)
        locs = [ctx.dloc(field, d.key(field, f"dflash_config.{field}")), ctx.tloc(tfield)]
        if have is None:
            yield Violation(
                f"target {doing} but the draft config has no {field} (expected {expected:g})", locs
            )
        elif _differs(have, expected):
            yield Violation(
                f"target {doing} but the draft's {field} is {have:g} (expected {expected:g})",
                locs,
                severity="warning",
            )


RULE = Rule(
    code="DF121",
    name="gemma-scaling-missing",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="A target that scales its embeddings (Gemma: sqrt(hidden); Granite: `embedding_multiplier`), divides its "
    "logits (`logits_scaling`) or soft-caps them (`final_logit_softcapping`) is mirrored by the draft's "
    "`dflash_config.input_embedding_scale` / `output_multiplier` / `final_logit_softcapping`, for the draft "
    "families whose loaders read those keys (z-lab DFlash 1 and 2; the logit keys also for DFlash2-Beam and MiniMax "
    "DFlash2). Missing: error; a different value: warning.",
    why="The dflash reference looks up raw rows of the target's embedding table and applies the raw output head, "
    "so the target's own scaling (Gemma's scaled embedding module, Granite's multipliers, soft-capping) reaches the "
    "draft only through these keys; without them the draft sees embeddings at another scale than the target's and "
    "its probabilities differ from the target's. The other engines read the keys differently (DF126). Families "
    "whose loaders read none of them (the Muse Glimmer assistant, whose logits are the target head's own; "
    "speculators, XPress, LiLiCorr, Laguna, Domino drafts) are not judged.",
    example='target {"model_type": "gemma2", "hidden_size": 3584, "final_logit_softcapping": 30.0}, '
    'draft {"dflash_config": {}}',
    fix="Set the missing keys in `dflash_config` to the values the draft was trained with (normally the expected "
    "values in the message).",
    sources=(REF_DRAFT_VALUE, REF_BLOCK, REF_LOGITS, HF_SCALED_EMBED, MLX_SCALES, VLLM_V2_EMBED, VLLM_V2_LOGITS,
             VLLM_BEAM_SOFTCAP, SGL_V2_LOGITS, VLLM_V1_LOGITS, HF_NATIVE_LOGITS),
)
