"""DF708: the MLX port's fixed attribute paths do not reach the target's embedding, head or layers."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._modules import ADAPT_HINT, MLX_EMBED_PATHS, MLX_HEAD_PATHS, MLX_LAYER_PATHS
from dflash_compat.rules._sources import MLX_BIND, MLX_HOOK


def check(ctx: RuleContext):
    framework, p = ctx.tree.framework, ctx.tree.paths
    if p is None:
        return
    paths = [path for path in (p.embed, p.head, p.layers) if path]
    if framework != "mlx" and any("language_model" in path for path in paths):
        return  # HF and mlx-vlm name multimodal wrappers differently: only the MLX tree can tell
    problems = []
    if p.embed and p.embed not in MLX_EMBED_PATHS:
        problems.append(f"embedding at {p.embed} (looks at {', '.join(MLX_EMBED_PATHS)})")
    if p.head and p.head not in MLX_HEAD_PATHS and not p.tied:
        problems.append(f"untied head at {p.head} (looks at lm_head, then silently uses embed_tokens.as_linear: "
                        "the wrong head)")
    if p.layers and p.layers not in MLX_LAYER_PATHS:
        problems.append(f"layers at {p.layers} (looks at {', '.join(MLX_LAYER_PATHS)})")
    if not problems:
        return
    source = "" if framework == "mlx" else " (paths from the transformers tree; mlx-lm usually mirrors them)"
    yield Violation(
        f"the MLX port's fixed paths do not fit the target{source}: {'; '.join(problems)}",
        [ctx.module_loc(path) for path in paths if path not in MLX_EMBED_PATHS + MLX_HEAD_PATHS + MLX_LAYER_PATHS],
        severity=None if framework == "mlx" else "warning",
    )


RULE = Rule(
    code="DF708",
    name="mlx-paths-unreachable",
    severity="error",
    backends=("mlx",),
    needs=("modules",),
    check=check,
    what="The target's embedding is at embed_tokens / model.embed_tokens / language_model.model.embed_tokens, its "
    "head at lm_head (or tied), its layers at model.layers / language_model.layers / layers: the fixed paths the "
    "MLX port (and older z-lab code) binds to.",
    why="`bind()` and the layer hooks use these attribute paths, not accessor methods; any other layout "
    "(GPT-2 `transformer.wte` / `transformer.h`, GPT-NeoX `embed_in`, OPT `model.decoder`) raises "
    "`Cannot find embed_tokens` / `Cannot find layers`.",
    example="a GPT-NeoX target (gpt_neox.embed_in, gpt_neox.layers)",
    fix=f"Expose the modules under the expected names; {ADAPT_HINT}.",
    sources=(MLX_BIND, MLX_HOOK),
)
