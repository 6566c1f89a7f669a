"""DF107: a target layer id is the target's last decoder layer, which engines read at different points."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_LAST_HIDDEN, MLX_HOOK, REF_FEATURES, VLLM_AUX_CAPTURE, VLLM_LLAMA_CAPTURE


def check(ctx: RuleContext):
    ids, n = ctx.draft.target_layer_ids, ctx.target.num_hidden_layers
    if not isinstance(ids, list) or n is None:
        return
    if any(i == n - 1 and not isinstance(i, bool) for i in ids):
        yield Violation(
            f"target layer id {n - 1} is the last of the target's {n} decoder layers: the transformers reference "
            "reads it after the final norm (HF hidden_states[-1]), vLLM and MLX capture the layer's output before "
            "the norm, so the draft matches at most one of them",
            [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
        )


RULE = Rule(
    code="DF107",
    name="layer-id-is-last-layer",
    severity="warning",
    backends=("transformers", "dflash", "vllm", "mlx"),
    check=check,
    what="No target layer id equals N-1 (the last decoder layer); safe ids are 0..N-2. (SGLang's handling of N-1 "
    "is a separate SGLang rule.)",
    why="The dflash reference takes feature i from HF `hidden_states[id + 1]`, and transformers replaces the last "
    "entry with the output of the final norm; vLLM captures `hidden_states + residual` after the layer and normalises "
    "only afterwards; the MLX port hooks the layer's own output. The same id therefore gives different features per "
    "engine, and the draft was trained on one of them.",
    example='target {"num_hidden_layers": 36}, draft {"dflash_config": {"target_layer_ids": [1, 12, 24, 35]}}',
    fix="Prefer a draft whose ids stop at N-2; if you must use this one, serve it on the engine it was trained "
    "with (HF-trained drafts saw the post-norm state) and expect lower acceptance elsewhere.",
    sources=(REF_FEATURES, HF_LAST_HIDDEN, VLLM_LLAMA_CAPTURE, VLLM_AUX_CAPTURE, MLX_HOOK),
)
