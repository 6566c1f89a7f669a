"""DF311: vLLM builds from before the layer-offset fix read every DFlash layer id off by one."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, EngineSource, Rule, Violation


def check(ctx: CheckContext):
    d = ctx.draft
    ids = d.target_layer_ids
    if d.is_speculators or not isinstance(ids, list):
        return
    early = [i - 1 for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    yield Violation(
        f"vLLM builds without the layer-offset fix (vllm PR #40727; 0.33.0 has it) capture the "
        f"outputs of layers {early} instead of target_layer_ids {ids}, with no error",
        [ctx.dloc("target_layer_ids")],
    )


RULE = Rule(
    code="DF311",
    name="vllm-layer-offset-fix",
    severity="info",
    backends=("vllm",),
    check=check,
    what="Reminds that the DFlash layer ids are read correctly only by vLLM builds with the +1 layer-offset fix "
    "(vllm PR #40727; vLLM 0.33.0 has it).",
    why="vLLM captures EAGLE-3 style: id e is the input of layer e. Builds with the fix add 1 to each DFlash id; "
    "earlier builds passed `target_layer_ids` unshifted, so each feature was the output of the layer before the "
    "intended one. Drafts still run, with lower acceptance.",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}} on a vLLM build without PR #40727',
    fix="Use vLLM 0.33.0 or another release with the fix.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "120-124", "V2: DFlash id + 1"),
        EngineSource("vllm", "vllm/v1/worker/gpu_model_runner.py", "5212-5216", "V1: DFlash id + 1"),
        EngineSource("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "117-120", "cites #40727"),
    ),
)
