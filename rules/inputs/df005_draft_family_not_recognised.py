"""DF005: the draft looks like a DFlash-style drafter but belongs to no family an engine loads."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import DRAFT_REGISTRIES
from dflash_compat.specs.families import FAMILIES


def check(ctx: RuleContext):
    d = ctx.draft
    if d.format != "unknown":
        return
    known = ", ".join(a for f in FAMILIES.values() for a in f.architectures)
    yield Violation(
        f"draft architectures {quote(d.architectures) if d.architectures else '(none)'} name no DFlash draft family that vLLM, SGLang, MLX or "
        "transformers loads; it was read as a z-lab layout, and the family-specific checks (weights, engine "
        f"support) were skipped. Known draft classes: {known}",
        [ctx.dloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF005",
    name="draft-family-not-recognised",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft's `architectures` (or `speculators_model_type`) names one of the DFlash draft families the "
    "engines register (docs/families.md), when the config otherwise looks like a DFlash drafter (a "
    "`dflash_config`, a DFlash-named class, or layer ids with a mask token).",
    why="Engines select the draft's loader by this name; a name none of them registers fails to load "
    "(\"Model architectures [...] are not supported\"), and the checker cannot know which tensors or keys "
    "an unknown family needs, so its weight and engine checks do not apply.",
    example='draft {"architectures": ["DFlash3DraftModel"], "dflash_config": {"target_layer_ids": [1, 9]}}',
    fix="Use the architecture name the draft's model card gives for vLLM or SGLang (for a z-lab draft "
    "`DFlashDraftModel`), or a newer dflash-check that knows the family.",
    sources=DRAFT_REGISTRIES,
)
