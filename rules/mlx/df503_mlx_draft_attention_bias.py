"""DF503: the draft's attention has bias terms, which the MLX draft does not implement."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_ATTENTION, MLX_LOAD_WEIGHTS


def check(ctx: RuleContext):
    if ctx.draft.attention_bias is not True:
        return
    yield Violation(
        "draft sets attention_bias = true: the MLX draft builds its q/k/v/o projections without bias",
        [ctx.dloc("attention_bias")],
    )


RULE = Rule(
    code="DF503",
    name="mlx-draft-attention-bias",
    severity="error",
    backends=("mlx",),
    check=check,
    what="The draft config does not set `attention_bias` to true.",
    why="The MLX port's draft attention has no bias parameters, so a draft trained with q/k/v/o biases cannot "
    "be reproduced there: its bias weights are rejected at load or left unused.",
    example='draft {"attention_bias": true}',
    fix="Serve this draft with the PyTorch, vLLM or SGLang path, or use a bias-free draft.",
    sources=(MLX_ATTENTION, MLX_LOAD_WEIGHTS),
)
