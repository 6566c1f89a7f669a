"""DF705: a target_layer_id points past the decoder layers the target actually builds."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.contract import LOOP_KEYS
from dflash_compat.rules._sources import HF_LAST_HIDDEN, MLX_HOOK, REF_FEATURES, VLLM_AUX_CAPTURE


def check(ctx: RuleContext):
    t, d, p = ctx.target, ctx.draft, ctx.tree.paths
    built = p.layers_len if p else None
    layers = p.layers if p else None
    ids = d.target_layer_ids if isinstance(d.target_layer_ids, list) else []
    # Only where the config's count differs: otherwise the config-level range rule already judged the ids.
    if not built or built == t.num_hidden_layers:
        return
    valid = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    past = [i for i in valid if i > built - 1]
    last = [i for i in valid if i == built - 1]
    where = [ctx.dloc("target_layer_ids"), ctx.module_loc(layers or "")]
    loops = {k: t.raw.get(k) for k in LOOP_KEYS if isinstance(t.raw.get(k), int) and t.raw.get(k) > 1}
    if past and loops:
        # a looped target (HRM, Dory) reapplies its layer stacks: output_hidden_states has one entry per
        # application, which is what the dflash reference indexes; the module count does not bound the ids
        yield Violation(
            f"target_layer_ids {past} index past {layers}[{built - 1}], but the target applies its {built} "
            f"built layers in loops ({', '.join(f'{k}={v}' for k, v in loops.items())}): the reference's "
            "output_hidden_states has one entry per application, so the ids may be valid; check that the draft "
            "was trained against this target's hidden-state indices",
            where, severity="warning",
        )
        return
    if past:
        yield Violation(
            f"target_layer_ids {past} index past {layers}[{built - 1}] (the target builds {built} "
            "decoder layers; later ones do not exist)",
            where,
        )
    if last:
        # the same judgement as DF107 for the config's count: the last layer is unsafe, not missing
        yield Violation(
            f"target_layer_id {built - 1} is the last of the {built} decoder layers the target builds "
            f"({layers}[{built - 1}]): HF returns it after the final norm, vLLM and MLX before",
            where,
            severity="warning",
        )


RULE = Rule(
    code="DF705",
    name="layer-id-beyond-built-layers",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="Every target_layer_id is at most N-2, with N the number of decoder layers the built target really has "
    "(checked only when that differs from the config's num_hidden_layers).",
    why="Some configs count layers differently from the module tree (MTP heads, text/vision splits); engines "
    "index the built list, so an id past its end is an IndexError and id N-1 is the post-norm state in HF.",
    example="config num_hidden_layers 48 while the built text model has 46 decoder layers, ids up to 45",
    fix="Use layer ids the draft was trained with for this exact target; they must index the built decoder layers.",
    sources=(REF_FEATURES, HF_LAST_HIDDEN, VLLM_AUX_CAPTURE, MLX_HOOK),
)
