"""DF308: EAGLE-style layer ids in the draft config override the DFlash ids in vLLM, unshifted."""

from __future__ import annotations

from typing import Any

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.specs import get_dotted

TOP = "eagle_aux_hidden_state_layer_ids"
IN_EAGLE_CONFIG = "eagle_config.eagle_aux_hidden_state_layer_ids"


def _ids(value: Any) -> list[int] | None:
    return value if isinstance(value, list) and value and all(is_int(i) for i in value) else None


def _same_layers(eagle: list[int], ids: Any) -> bool:
    """EAGLE id e captures the input of layer e, i.e. the output of DFlash id e - 1."""
    return isinstance(ids, list) and eagle == [i + 1 for i in ids if is_int(i)] and len(eagle) == len(ids)


def _wanted(ids: Any) -> str:
    return f"; the DFlash ids ask for the outputs of layers {quote(ids)}" if ids is not None else ""


def check(ctx: RuleContext):
    d = ctx.draft
    if d.is_speculators:
        return  # vLLM writes both keys itself from aux_hidden_state_layer_ids, consistently
    raw, ids = d.raw, d.target_layer_ids
    top = _ids(get_dotted(raw, TOP))
    if top is not None:
        if not _same_layers(top, ids):
            yield Violation(
                f"vLLM uses {TOP} {quote(top)} as written (no +1 shift) instead of the DFlash ids: it captures the outputs "
                f"of decoder layers {quote([i - 1 for i in top])}{_wanted(ids)}",
                [ctx.dloc("eagle_aux_hidden_state_layer_ids", TOP), ctx.dloc("target_layer_ids")],
            )
        return
    if not ctx.engine("vllm").feature("v1_dflash_proposer"):
        return  # only the V1 runner reads eagle_config for layer ids; vLLM 0.34 has none
    eagle_config = get_dotted(raw, "eagle_config")
    if not isinstance(eagle_config, dict) or not eagle_config:
        return
    nested = _ids(eagle_config.get(TOP))
    if (nested is None and TOP in eagle_config) or (nested is not None and _same_layers(nested, ids)):
        return  # not a list of ints: not judged here; the shifted DFlash ids: the same layers
    if nested is not None:
        got = f"captures the outputs of decoder layers {quote([i - 1 for i in nested])} ({IN_EAGLE_CONFIG} as written)"
        loc = [ctx.dloc("eagle_aux_hidden_state_layer_ids", IN_EAGLE_CONFIG), ctx.dloc("target_layer_ids")]
    else:
        got = "ignores the DFlash ids and captures the target's default EAGLE-3 layers (2, N/2, N-3)"
        loc = [ctx.dloc("eagle_config", "eagle_config"), ctx.dloc("target_layer_ids")]
    yield Violation(
        f"the draft has an `eagle_config` block: vLLM's V1 model runner then {got}{_wanted(ids)}; the default V2 "
        "runner uses the DFlash ids",
        loc,
        severity="info",
    )


RULE = Rule(
    code="DF308",
    name="vllm-eagle-layer-ids-override",
    severity="warning",
    backends=("vllm",),
    check=check,
    what="A top-level `eagle_aux_hidden_state_layer_ids` names the same layers as the DFlash ids in EAGLE-3 "
    "convention (each a `target_layer_ids` entry + 1): else a warning. An `eagle_config` block, which only vLLM's "
    "V1 model runner reads for layer ids, is an info unless its ids are the shifted DFlash ids.",
    why="vLLM (both runners) takes a top-level `eagle_aux_hidden_state_layer_ids` before the DFlash ids and uses it "
    "without the +1 it applies to `target_layer_ids` (EAGLE id e = the input of layer e = the output of layer "
    "e-1), so a copy of the DFlash ids feeds every feature one layer early. The V1 runner also lets any "
    "non-empty `eagle_config` replace the DFlash ids by its `eagle_aux_hidden_state_layer_ids`, falling back to "
    "the target's EAGLE-3 default layers when that key is absent. No vLLM code reads "
    "`dflash_config.eagle_aux_hidden_state_layer_ids`.",
    example='draft {"eagle_aux_hidden_state_layer_ids": [1, 9, 17, 25, 33], '
    '"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix="Remove `eagle_aux_hidden_state_layer_ids` and `eagle_config` from the draft config, or set the EAGLE ids "
    "to each target layer id + 1.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "113-150",
                     "V2: top-level EAGLE ids first, then DFlash ids + 1"),
        EngineSource("vllm", "vllm/v1/worker/gpu_model_runner.py", "5190-5224",
                     "V1: top-level EAGLE ids, then DFlash ids + 1, then eagle_config's ids"),
    ),
)
