"""DF505: mlx-lm builds the target without its sliding window, so on MLX it attends over the whole context."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

MLXLM_FROM_DICT = EngineSource("mlx-lm", "mlx_lm/models/base.py", "13-21",
                               "ModelArgs.from_dict keeps only the keys its dataclass declares")
MLXLM_REMAP = EngineSource("mlx-lm", "mlx_lm/utils.py", "48-58", "mistral (and iquestcoder, xverse) load as llama")
MLXLM_LLAMA = EngineSource("mlx-lm", "mlx_lm/models/llama.py", "34-42",
                           "layer_types defaults to all full_attention; the window applies to sliding layers only")
HF_MISTRAL = EngineSource("transformers", "transformers/models/mistral/modeling_mistral.py", "173",
                          "every layer attends within config.sliding_window")

# model_type -> its mlx-lm ModelArgs, which has no sliding_window, so the window is dropped (each written out:
# the facts extractor reads the rules' citations from their source).
_WHY = "ModelArgs without sliding_window"
NO_WINDOW_SOURCES = {
    "mixtral": EngineSource("mlx-lm", "mlx_lm/models/mixtral.py", "14-34", _WHY),
    "qwen2": EngineSource("mlx-lm", "mlx_lm/models/qwen2.py", "17-32", _WHY),
    "qwen3": EngineSource("mlx-lm", "mlx_lm/models/qwen3.py", "16-42", _WHY),
    "qwen3_moe": EngineSource("mlx-lm", "mlx_lm/models/qwen3_moe.py", "17-38", _WHY),
    "phi3": EngineSource("mlx-lm", "mlx_lm/models/phi3.py", "15-47", _WHY),
    "starcoder2": EngineSource("mlx-lm", "mlx_lm/models/starcoder2.py", "13-25", _WHY),
    "gemma2": EngineSource("mlx-lm", "mlx_lm/models/gemma2.py", "13-29", _WHY),
    "olmoe": EngineSource("mlx-lm", "mlx_lm/models/olmoe.py", "15-40", _WHY),
    "dots1": EngineSource("mlx-lm", "mlx_lm/models/dots1.py", "16-43", _WHY),
    "minimax": EngineSource("mlx-lm", "mlx_lm/models/minimax.py", "16-36", _WHY),
}
# Types mlx-lm builds with its llama module, which keeps the window only where `layer_types` marks a layer sliding.
_AS_LLAMA = ("mistral", "iquestcoder", "xverse")


def _dropped(ctx: RuleContext) -> EngineSource | None:
    t = ctx.target
    if t.text_prefix or not t.uses_sliding_window:
        return None  # a VLM wrapper is another mlx-lm module; no window, nothing to drop
    if t.model_type in NO_WINDOW_SOURCES:
        return NO_WINDOW_SOURCES[t.model_type]
    if t.model_type in _AS_LLAMA and "sliding_attention" not in (t.layer_types or []):
        return MLXLM_LLAMA
    return None


def check(ctx: RuleContext):
    source = _dropped(ctx)
    window, context = ctx.target.sliding_window, ctx.target.max_position_embeddings
    if source is None or (context is not None and window >= context):
        return  # a window as long as the context never binds
    yield Violation(
        f"mlx-lm builds model_type {ctx.target.model_type!r} without its sliding window ({source.cite()}): on MLX "
        f"the target attends over the whole context where the model was trained to see {window} tokens, so beyond "
        f"{window} tokens its outputs differ from transformers' and the serving engines'",
        [ctx.tloc("sliding_window"), ctx.tloc("model_type", key="model_type")],
    )


RULE = Rule(
    code="DF505",
    name="mlx-target-sliding-window-dropped",
    severity="warning",
    backends=("mlx",),
    check=check,
    what="The target's sliding window survives mlx-lm's conversion: its model_type is not one whose mlx-lm "
    "ModelArgs has no `sliding_window` (mixtral, qwen2, qwen3, qwen3_moe, phi3, starcoder2, gemma2, olmoe, dots1, "
    "minimax), nor a Mistral loaded as llama without `layer_types` that mark sliding layers.",
    why="mlx-lm's ModelArgs.from_dict silently drops every key its dataclass does not declare, and its llama module "
    "(which runs Mistral) windows only the layers `layer_types` calls sliding. Such a target computes full attention "
    "on MLX: plain decoding and DFlash (still lossless against the MLX target) give other tokens than transformers "
    "and the serving engines once the context is longer than the window, and the draft, trained on the windowed "
    "target's hidden states, may accept less there. Shorter contexts are unaffected.",
    example='target {"model_type": "mistral", "sliding_window": 4096, "max_position_embeddings": 32768} on MLX',
    fix="Keep contexts on MLX shorter than the window, or run the target where the window applies "
    "(transformers, vLLM, SGLang).",
    sources=(MLXLM_FROM_DICT, MLXLM_REMAP, MLXLM_LLAMA, HF_MISTRAL, *NO_WINDOW_SOURCES.values()),
)
