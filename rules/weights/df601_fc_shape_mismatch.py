"""DF601: the draft's fc.weight is not [hidden, len(target_layer_ids) * hidden]."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS, REF_DRAFT_INIT, SGL_DRAFT_FC, VLLM_FC_WIDTH
from dflash_compat.rules.weights._draft_tensors import modelled, source_name, weight_shapes


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return  # Laguna drafts size fc from the target's width; unknown families are DF005's
    _, shapes, _ = weight_shapes(ctx.headers)
    got = shapes.get("fc.weight")
    ids = d.target_layer_ids if isinstance(d.target_layer_ids, list) else None
    if got is None or not ids:
        return
    h = d.hidden_size
    want = [h, len(ids) * h]
    if got == want:
        return
    implied = ""
    if len(got) == 2 and got[0] == h and got[1] % h == 0:
        implied = f": the weights were trained on {got[1] // h} target layers, the config lists {len(ids)}"
    yield Violation(
        f"fc.weight is {quote(got)}, expected {want} (hidden {h} x {len(ids)} target_layer_ids){implied}",
        [ctx.tensor_loc(fc := source_name(ctx.headers, "fc.weight"), ctx.headers.tensor_files.get(fc, "model.safetensors")),
         ctx.dloc("target_layer_ids")],
    )


RULE = Rule(
    code="DF601",
    name="fc-shape-mismatch",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's `fc.weight` (read from the safetensors header) is `[hidden_size, len(target_layer_ids) * "
    "hidden_size]`.",
    why="fc projects the concatenated target hidden states of every listed layer down to the draft width; a "
    "checkpoint trained on another number of layers (or another hidden size) fails at load in every engine "
    "(`size mismatch for fc.weight`, SGLang ValueError) or multiplies mismatched matrices.",
    example="fc.weight [4096, 16384] with dflash_config.target_layer_ids of length 5 (expects [4096, 20480])",
    fix="Restore the `target_layer_ids` the draft was trained with (the weights imply how many), or use the "
    "matching checkpoint revision.",
    sources=(REF_DRAFT_INIT, MLX_DRAFT_INIT, MLX_LOAD_WEIGHTS, VLLM_FC_WIDTH, SGL_DRAFT_FC),
)
