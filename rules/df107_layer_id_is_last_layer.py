"""DF107: a target layer id is the target's last decoder layer."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation


def check(ctx: CheckContext):
    ids, n = ctx.draft.target_layer_ids, ctx.target.num_hidden_layers
    if not isinstance(ids, list) or n is None:
        return
    if any(i == n - 1 and not isinstance(i, bool) for i in ids):
        yield Violation(
            f"target layer id {n - 1} is the last of the target's {n} decoder layers: transformers returns it after "
            "the final norm, vLLM and MLX capture it before, and SGLang raises IndexError for some models",
            [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
        )


RULE = Rule(
    code="DF107",
    name="layer-id-is-last-layer",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="No target layer id equals N-1 (the last decoder layer); safe ids are 0..N-2.",
    why="HF's last `hidden_states` entry is taken AFTER the final norm, while vLLM and MLX capture the layer's raw "
    "output before it, so the same id gives different features per engine and the draft matches at most one of them; "
    "SGLang raises IndexError for some model classes.",
    example='target {"num_hidden_layers": 36}, draft {"dflash_config": {"target_layer_ids": [1, 12, 24, 35]}}',
    fix="Prefer a draft whose ids stop at N-2; if you must use this one, serve it on the engine it was trained "
    "with (HF-trained drafts saw the post-norm state) and expect lower acceptance elsewhere.",
)
