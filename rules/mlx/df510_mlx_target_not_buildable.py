"""DF510: the installed mlx-lm cannot build the target from its config."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_LOAD_TARGET, MLXLM_CLASSES


def check(ctx: RuleContext):
    facts = ctx.tree.mlx
    if facts is None or facts.supported:
        return
    version = facts.mlx_lm_version or "?"
    yield Violation(
        f"mlx-lm {version} cannot build model_type {quote(facts.model_type)} from this config "
        f"({facts.error}); MLX module checks skipped",
        [ctx.tloc("model_type", key="model_type")],
    )


RULE = Rule(
    code="DF510",
    name="mlx-target-not-buildable",
    severity="warning",
    backends=("mlx",),
    needs=("mlx-modules",),
    check=check,
    what="The installed mlx-lm can build the target from its config.json (its model class for the `model_type`, "
    "after mlx-lm's own remapping, constructed without weights).",
    why="The MLX port loads the target with mlx-lm; a model type mlx-lm does not implement, or a config its "
    "ModelArgs rejects, fails in `mlx_lm.load` before any drafting, and none of the other MLX checks can run.",
    example='target {"model_type": "brand_new_arch"} with an mlx-lm release that predates it',
    fix="Upgrade mlx-lm (`pip install -U mlx-lm`) to a release that supports the model type, or convert the "
    "checkpoint with a matching `mlx_lm.convert`; the checks for other engines are unaffected.",
    sources=(MLX_LOAD_TARGET, MLXLM_CLASSES),
)
