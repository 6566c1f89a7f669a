"""DF512: the MLX port multiplies the draft's block embedding by the target's own `embed_scale`."""

from __future__ import annotations

import math

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_BIND, MLX_EMBED, MLXLM_EMBED_SCALE, MLXLM_GEMMA3_SCALE, REF_EMBED


def check(ctx: RuleContext):
    d, scaling = ctx.draft, ctx.tree.scaling
    scale = scaling.embed_scale if scaling else None
    if scale is None or math.isclose(scale, 1.0):
        return
    source = scaling.embed_scale_source[0] if scaling.embed_scale_source else None
    mine = d.input_embedding_scale if d.input_embedding_scale is not None else 1.0
    yield Violation(
        f"the target's {source} is {scale:g}: the MLX port multiplies the block "
        f"embedding by it and by the draft's input_embedding_scale ({mine:g}), {scale * mine:g} in all, where the "
        f"dflash transformers reference uses {mine:g}",
        [ctx.module_loc(source or ""),
         ctx.dloc("input_embedding_scale", d.key("input_embedding_scale", "dflash_config.input_embedding_scale"))],
    )


RULE = Rule(
    code="DF512",
    name="mlx-embed-scale-applied",
    severity="warning",
    backends=("mlx",),
    needs=("mlx-modules",),
    check=check,
    what="The mlx-lm target has no `embed_scale` attribute on its embedding module or on the module holding it "
    "(gemma4_text, gear have one; mlx-lm's gemma, gemma2 and gemma3 scale inline and have none).",
    why="dflash.model_mlx's bind() reads `embed_tokens.embed_scale`, else the parent's `embed_scale`, and multiplies "
    "the anchor + mask embeddings by it on top of the draft's input_embedding_scale, while the dflash transformers "
    "reference embeds raw rows times input_embedding_scale (the other engines differ again: DF126). A draft that "
    "already sets input_embedding_scale for such a target gets the scale twice on MLX, one that does not gets it "
    "only on MLX; either way MLX feeds embeddings at a scale the reference does not (acceptance near 1, no error). "
    "DF126 judges the known model types from the config; this rule reads the built mlx-lm tree.",
    example='a gemma4_text target (model.embed_scale = sqrt(hidden_size)) with a draft '
    '{"dflash_config": {"input_embedding_scale": 45.25}}',
    fix="Check which scale the draft was trained with; dflash-compat's MLX runtime (`dflash-check smoke --backend "
    "mlx`) uses raw rows times input_embedding_scale, like the PyTorch reference, and shows the acceptance you get.",
    sources=(MLX_BIND, MLX_EMBED, MLXLM_EMBED_SCALE, MLXLM_GEMMA3_SCALE, REF_EMBED),
)
