"""What lmdeploy's DFlash code reads from a pair and a launch, as it reads it (lmdeploy 0.18.0): one place for the
rules of this folder. A draft config is read the way lmdeploy loads it: transformers' Qwen3Config (model_type
qwen3), whose defaults fill `layer_types` and drop `sliding_window` unless `use_sliding_window` is set."""

from __future__ import annotations

from typing import Any, Optional

from dflash_compat.checker import EngineSource, RuleContext

ENGINE = "lmdeploy"
UTILS = "lmdeploy/pytorch/spec_decode/dflash_utils.py"
CONFIG = "lmdeploy/pytorch/config.py"
# lmdeploy's own defaults for the options a user did not give (cli/utils.py, 0.18.0)
DEFAULT_NUM_DRAFT_TOKENS = 1  # --speculative-num-draft-tokens (cli/utils.py:846-849)
QWEN3_MAX_WINDOW_LAYERS = 28  # transformers Qwen3Config.max_window_layers default




FROM_CONFIG = EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "735-768", "SpecDecodeConfig.from_config: the DFlash checks run when the engine starts")


def draft_class(ctx: RuleContext) -> Optional[str]:
    """The draft class lmdeploy builds: auto_map's AutoModelForCausalLM, else the first architecture it maps
    (models/patch.py:165-197)."""
    auto = ctx.draft.raw.get("auto_map")
    if isinstance(auto, dict) and isinstance(auto.get("AutoModelForCausalLM"), str):
        return auto["AutoModelForCausalLM"].split(".")[-1]
    archs = [a for a in ctx.draft.architectures if isinstance(a, str)]
    return archs[0] if archs else None


def is_lmdeploy_draft(ctx: RuleContext) -> bool:
    """The draft is a class lmdeploy's DFlash drafter builds (DF450 reports the others, once)."""
    return draft_class(ctx) in ctx.engine("lmdeploy").facts.get("draft_architectures", ())


def dflash_config(ctx: RuleContext) -> Any:
    return ctx.draft.raw.get("dflash_config")


def nested(ctx: RuleContext) -> dict:
    cfg = dflash_config(ctx)
    return cfg if isinstance(cfg, dict) else {}


def num_speculative_tokens(ctx: RuleContext) -> int:
    """--speculative-dflash-block-size B means B - 1 (messages.py:878-886); else the draft-token flag (default 1)."""
    o = ctx.options
    if o.lmdeploy_block_size is not None:
        return o.lmdeploy_block_size - 1
    return o.lmdeploy_num_draft_tokens if o.lmdeploy_num_draft_tokens is not None else DEFAULT_NUM_DRAFT_TOKENS


def use_sliding_window(ctx: RuleContext) -> bool:
    return bool(ctx.draft.raw.get("use_sliding_window", False))


def sliding_window(ctx: RuleContext) -> Any:
    """The window lmdeploy sees: Qwen3Config keeps `sliding_window` only with `use_sliding_window`; None, 0 and -1
    mean none (dflash_utils.py:58-66)."""
    if not use_sliding_window(ctx):
        return None
    value = ctx.draft.raw.get("sliding_window", 4096)
    return None if value in (None, 0, -1) else value


def layer_types(ctx: RuleContext) -> Any:
    """The draft's layer_types as Qwen3Config leaves them (derived when the config has none)."""
    raw = ctx.draft.raw
    if raw.get("layer_types") is not None:
        return raw["layer_types"]
    n = raw.get("num_hidden_layers")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return None
    window = sliding_window(ctx)
    first = raw.get("max_window_layers", QWEN3_MAX_WINDOW_LAYERS)
    first = first if isinstance(first, int) else QWEN3_MAX_WINDOW_LAYERS
    return ["sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n)]


def key_of(ctx: RuleContext, name: str) -> str:
    """`dflash_config.NAME` when the draft nests it there, else the top-level NAME (for locations)."""
    return f"dflash_config.{name}" if name in nested(ctx) else name


def nested_layer_ids(ctx: RuleContext) -> Any:
    """dflash_config.target_layer_ids as lmdeploy reads it (the top level is never read): None when absent."""
    return nested(ctx).get("target_layer_ids")


def ids_are_integers(ids: Any) -> bool:
    return (isinstance(ids, (list, tuple)) and len(ids) > 0
            and all(isinstance(i, int) and not isinstance(i, bool) for i in ids))


def formula_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """lmdeploy's fallback ids (dflash_utils.py:35-55); ValueError where it raises."""
    if num_target_layers < 1 or num_draft_layers < 1:
        raise ValueError("depths must be positive")
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    if end < start:
        raise ValueError(f"the fallback needs at least 4 target layers, got {num_target_layers}")
    span = end - start
    return [int(round(start + i * span / (num_draft_layers - 1))) for i in range(num_draft_layers)]


def config_dtype(raw: dict):
    """The dtype lmdeploy reads from a config: `dtype`, then text_config's `dtype`, then `torch_dtype`."""
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    for value in (raw.get("dtype"), text.get("dtype"), raw.get("torch_dtype")):
        if value is not None:
            return value
    return None


def resolved(raw: dict, flag) -> str:
    """The dtype lmdeploy runs a model in (config.py _update_torch_dtype; the GPU's bf16 support aside)."""
    if flag in ("float16", "bfloat16"):
        return flag
    dtype = config_dtype(raw)
    return dtype if dtype in ("float16", "bfloat16") else "float16"
