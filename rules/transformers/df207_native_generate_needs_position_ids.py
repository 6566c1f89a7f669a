"""DF207: transformers' native DFlash generation reads position_ids that generate() makes only for a forward that
names them."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

HF_MAKES_POSITIONS = EngineSource("transformers", "transformers/generation/utils.py", "2888-2890",
                                  "position_ids are created only when forward's signature names them")
HF_READS_POSITIONS = EngineSource("transformers", "transformers/generation/candidate_generator.py", "1617",
                                  "DFlashTokenCandidateGenerator: model_kwargs[\"position_ids\"]")


def check(ctx: RuleContext):
    fwd = ctx.tree.forward
    if fwd is None or not fwd.params or "position_ids" in fwd.params:
        return
    yield Violation(
        f"{ctx.tree.model_class}.forward takes no `position_ids` parameter, so generate() never makes them, and "
        "transformers' generate(speculation_type=\"dflash\") reads model_kwargs[\"position_ids\"] to place the "
        "draft block: it stops with KeyError: 'position_ids' (an engine limitation in transformers 5.24.0 and "
        "5.25.0)",
        [ctx.module_loc("forward")],
    )


RULE = Rule(
    code="DF207",
    name="native-generate-needs-position-ids",
    severity="error",
    backends=("transformers",),
    needs=("torch-modules",),
    check=check,
    what="The target's forward names a `position_ids` parameter (read from its signature), which transformers' "
    "native DFlash generation needs.",
    why="generate() adds position_ids to the model kwargs only when the target's forward signature names them "
    "(transformers 5.24.0 generation/utils.py:2888-2890), and the DFlash candidate generator slices "
    "model_kwargs[\"position_ids\"] for every draft block (candidate_generator.py:1617; 5.25.0 :1651). A target "
    "without the parameter (Mamba, whose positions are implicit in its state) runs plain greedy generate() but "
    "fails DFlash generation with KeyError on the first draft.",
    example="target {\"model_type\": \"mamba\"} with a Muse-Glimmer assistant on backend transformers",
    fix="Use the dflash reference (backend `dflash`) or another engine for this target; transformers' native "
    "DFlash needs a target whose forward takes position_ids.",
    sources=(HF_MAKES_POSITIONS, HF_READS_POSITIONS),
)
