"""DF520: mlx-lm's Gemma 3 text model indexes the cache at sliding_window_pattern - 1, past the last layer."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

MLXLM_DEFAULT = EngineSource("mlx-lm", "mlx_lm/models/gemma3_text.py", "30",
                             "ModelArgs.sliding_window_pattern defaults to 6")
MLXLM_INDEX = EngineSource("mlx-lm", "mlx_lm/models/gemma3_text.py", "195",
                           "Gemma3Model.__call__ reads cache[sliding_window_pattern - 1]")
MLXLM_CACHE = EngineSource("mlx-lm", "mlx_lm/models/gemma3_text.py", "247-257",
                           "make_cache: one cache per layer, num_hidden_layers in all")
MLXLM_FROM_DICT = EngineSource("mlx-lm", "mlx_lm/models/base.py", "13-21",
                               "ModelArgs.from_dict keeps only the keys its dataclass declares")

DEFAULT_PATTERN = 6
TYPES = ("gemma3_text",)


def check(ctx: RuleContext):
    t = ctx.target
    if t.model_type not in TYPES or t.text_prefix or not isinstance(t.num_hidden_layers, int):
        return
    pattern = t.raw.get("sliding_window_pattern")
    given = isinstance(pattern, int) and not isinstance(pattern, bool)
    if not given:
        pattern = DEFAULT_PATTERN
    if pattern - 1 < t.num_hidden_layers:
        return
    how = "`sliding_window_pattern` = " + str(pattern) if given else (
        f"no `sliding_window_pattern` key (transformers 5 writes `layer_types` and `_sliding_window_pattern`, which "
        f"mlx-lm does not read), so mlx-lm's default {DEFAULT_PATTERN} ({MLXLM_DEFAULT.cite()})")
    yield Violation(
        f"the target has {t.num_hidden_layers} layers and {how}: mlx-lm's Gemma 3 text model reads "
        f"cache[{pattern - 1}] on every forward ({MLXLM_INDEX.cite()}), past its {t.num_hidden_layers} layer "
        f"caches, so on MLX it stops with IndexError before the first token",
        [ctx.tloc("num_hidden_layers"), ctx.tloc("model_type", key="model_type")],
    )


RULE = Rule(
    code="DF520",
    name="mlx-gemma3-window-pattern-past-layers",
    severity="error",
    backends=("mlx",),
    check=check,
    what="A gemma3_text target has more layers than mlx-lm's `sliding_window_pattern` minus one (the config's "
    "`sliding_window_pattern`, or mlx-lm's default 6 where the config has none).",
    why="mlx-lm's Gemma3Model.__call__ builds the global mask from cache[sliding_window_pattern - 1] "
    "(mlx_lm/models/gemma3_text.py:195) while make_cache gives one cache per layer. Configs written by "
    "transformers 5 carry `layer_types` and `_sliding_window_pattern`, neither of which mlx-lm's ModelArgs "
    "declares, so the pattern falls back to 6: a Gemma 3 text model with 5 or fewer layers (a tiny test model, "
    "a pruned one) raises IndexError in mlx-lm and in the dflash MLX port alike.",
    example='target {"model_type": "gemma3_text", "num_hidden_layers": 4, "layer_types": [...]} on MLX',
    fix="Add `\"sliding_window_pattern\"` (at most num_hidden_layers) to the target's config.json for mlx-lm, "
    "or run the pair on a torch backend.",
    sources=(MLXLM_DEFAULT, MLXLM_INDEX, MLXLM_CACHE, MLXLM_FROM_DICT),
)
