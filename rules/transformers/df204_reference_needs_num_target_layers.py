"""DF204: the dflash reference cannot build a draft whose config has no num_target_layers, even with ids."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import REF_DRAFT_INIT, REF_DRAFT_VALUE, REF_IDS_FORMULA
from dflash_compat.specs.families import DFLASH_PACKAGE_FORMATS

HF_MISSING_ATTRIBUTE = EngineSource("transformers", "transformers/configuration_utils.py", "658-662",
                                    "config attribute lookup: an absent key raises AttributeError")


def check(ctx: RuleContext):
    d = ctx.draft
    # Without ids either, DF103 reports the same failure. Other families load through their own classes
    # (transformers' Muse-Glimmer assistant) or not at all on transformers (DF009).
    if d.format not in DFLASH_PACKAGE_FORMATS or d.num_target_layers is not None or d.target_layer_ids is None:
        return
    yield Violation(
        "draft config has target layer ids but no `num_target_layers`: the dflash reference evaluates its default "
        "ids from config.num_target_layers even when ids are given, and fails with AttributeError while building "
        "the draft",
        [ctx.dloc("num_target_layers", "num_target_layers")],
    )


RULE = Rule(
    code="DF204",
    name="reference-needs-num-target-layers",
    severity="error",
    backends=("dflash",),
    check=check,
    what="A z-lab DFlash v1 / v2 draft config has a top-level `num_target_layers`, which the dflash package's "
    "transformers draft model reads whether or not the layer ids are given.",
    why="DFlashDraftModel.__init__ passes `build_target_layer_ids(config.num_target_layers, ...)` as the default of "
    "its id lookup, and Python evaluates that default first: a Qwen3Config without the key raises AttributeError "
    "before the explicit `dflash_config.target_layer_ids` are even read (checked against the dflash 0.1.0 package). "
    "vLLM and SGLang do not need the key; MLX does (DF501).",
    example='draft {"num_hidden_layers": 5, "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33], ...}} '
    "(no num_target_layers)",
    fix="Add `\"num_target_layers\": N` (the depth of the target the draft was trained for) to the draft config.",
    sources=(REF_DRAFT_INIT, REF_IDS_FORMULA, REF_DRAFT_VALUE, HF_MISSING_ATTRIBUTE),
)
