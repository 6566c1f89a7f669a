"""DF314: vLLM builds sliding-window draft layers but the draft config gives no window size."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

SLIDING = "sliding_attention"
# Drafts vLLM builds from qwen3_dflash.py's layer-attention resolver (DFlash v1/v2, Muse-Glimmer, LiLiCorr).
FORMATS = ("zlab-v1", "zlab-v2", "muse-glimmer-assistant", "lilicorr")


def check(ctx: RuleContext):
    d = ctx.draft
    if d.format not in FORMATS:
        return
    raw = d.raw
    dc = raw.get("dflash_config") if isinstance(raw.get("dflash_config"), dict) else {}
    use_swa = dc.get("use_swa", False)
    types = raw.get("layer_types")
    any_sliding = isinstance(types, list) and any(t == SLIDING for t in types)
    # vLLM: layer_types absent, or use_swa with no sliding entry -> every layer is sliding iff use_swa;
    # otherwise each layer follows its layer_types entry.
    if not (use_swa or any_sliding):
        return
    window = dc["swa_window_size"] if "swa_window_size" in dc else raw.get("sliding_window")
    if window is not None:
        return
    why = "dflash_config.use_swa is set" if use_swa and not any_sliding else "layer_types has sliding_attention layers"
    keys = ["dflash_config.use_swa" if use_swa and not any_sliding else "layer_types"]
    yield Violation(
        f"{why} but neither dflash_config.swa_window_size nor the top-level sliding_window gives a window: vLLM "
        "stops at load (\"DFlash sliding attention requires a window size configured in "
        "dflash_config.swa_window_size or the top-level sliding_window.\")",
        [ctx.dloc(k.split(".")[-1], k) for k in keys],
    )


RULE = Rule(
    code="DF314",
    name="vllm-draft-sliding-window-missing",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A draft whose layers vLLM builds as sliding-window attention (`dflash_config.use_swa`, or "
    "`sliding_attention` entries in `layer_types`) gives the window: `dflash_config.swa_window_size`, else the "
    "top-level `sliding_window`.",
    why="vLLM's DFlash attention decides per layer whether it is sliding: with `use_swa` and no sliding entry "
    "in `layer_types` (or no `layer_types`) every layer is; otherwise the layer's own entry decides. A sliding "
    "layer reads its window from `dflash_config.swa_window_size` (a key present with null counts as no "
    "window; the top level is not consulted then) or the top-level `sliding_window`, and refuses to build "
    "without one.",
    example='draft {"dflash_config": {"use_swa": true}} (no swa_window_size, no sliding_window)',
    fix="Set dflash_config.swa_window_size (or sliding_window) to the window the draft was trained with.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "120-122",
                     "layer_types and dflash_config.use_swa read"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "139-154",
                     "sliding layers: window from swa_window_size or sliding_window, else ValueError"),
    ),
)
