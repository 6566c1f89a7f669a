"""DF311: the layer ids are the dflash default moved up by one, as if edited for vLLM builds before the offset fix."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules._sources import REF_IDS_FORMULA
from dflash_compat.specs.draft import build_target_layer_ids


def check(ctx: RuleContext):
    d, n = ctx.draft, ctx.target.num_hidden_layers
    ids = d.target_layer_ids
    # Only the one shape that says "edited for the old convention": every current engine adds the +1 itself.
    if d.is_speculators or d.target_layer_ids_guessed or not isinstance(ids, list) or not ids:
        return
    if not all(is_int(i) for i in ids) or not is_int(n) or n < 4:
        return
    default = build_target_layer_ids(n, len(ids))
    if ids != [i + 1 for i in default]:
        return
    yield Violation(
        f"target_layer_ids {quote(ids)} are the dflash default for a {n}-layer target ({quote(default)}) moved up by one, as if "
        "edited for vLLM builds without the layer-offset fix (vllm PR #40727), which read each id one layer early. "
        f"vLLM 0.33.0 adds the one itself and captures the outputs of layers {quote(ids)}: if the draft was trained on "
        f"{quote(default)}, every feature now comes from the layer after",
        [ctx.dloc("target_layer_ids")],
    )


RULE = Rule(
    code="DF311",
    name="layer-ids-shifted-for-old-vllm",
    severity="info",
    backends=("vllm",),
    check=check,
    what="Notes layer ids that equal the dflash default layout for the target's depth moved up by one: the edit a "
    "config needed for vLLM builds without the +1 layer-offset fix (vllm PR #40727; 0.33.0 has it).",
    why="vLLM captures EAGLE-3 style: id e is the input of layer e. Builds with the fix add 1 to each DFlash id; "
    "earlier builds passed `target_layer_ids` unshifted, so each feature was the output of the layer before the "
    "intended one, and a config could compensate by adding 1 to every id. On a build with the fix (and on the "
    "dflash reference and SGLang, which read ids as layer outputs) such a config reads one layer too late: the "
    "draft still runs, with lower acceptance. Ids that match the default, or any other choice, are not judged.",
    example='target {"num_hidden_layers": 36}, draft {"dflash_config": {"target_layer_ids": [2, 10, 18, 26, 34]}} '
    "(the default is [1, 9, 17, 25, 33])",
    fix="If the draft was trained on the default ids, put them back (subtract 1 from each); if it was trained on "
    "these layers, nothing to do.",
    sources=(
        REF_IDS_FORMULA,
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "120-124", "V2: DFlash id + 1"),
        EngineSource("vllm", "vllm/v1/worker/gpu_model_runner.py", "5212-5216", "V1: DFlash id + 1"),
        EngineSource("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "117-120", "cites #40727"),
    ),
)
