"""DF455: the draft has no `num_target_layers`, which lmdeploy reads unconditionally."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft


def check(ctx: RuleContext):
    if not is_lmdeploy_draft(ctx) or "num_target_layers" in ctx.draft.raw:
        return
    n = ctx.target.num_hidden_layers
    yield Violation(
        f"lmdeploy {ctx.version('lmdeploy')} reads draft_hf_config.num_target_layers: AttributeError at start-up",
        locations=[ctx.dloc("num_target_layers", "num_target_layers")],
        fix=f'Add "num_target_layers": {n if n else "N"} (the target\'s depth) to the draft\'s config.json.',
    )


RULE = Rule(
    code="DF455",
    name="lmdeploy-num-target-layers-missing",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft's config.json has `num_target_layers`.",
    why="lmdeploy reads it as an attribute of the draft's config (no default) to compare depths; transformers' "
    "Qwen3Config does not define it, so a draft without the key stops the engine.",
    example="a draft config without num_target_layers",
    fix='Add "num_target_layers" equal to the target\'s num_hidden_layers.',
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "134", "num_target_layers = draft_hf_config.num_target_layers"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
