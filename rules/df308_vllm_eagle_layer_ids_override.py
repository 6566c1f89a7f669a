"""DF308: EAGLE-style layer ids in the draft config override the DFlash ids in vLLM, unshifted."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote

from ._common import is_int


def check(ctx: CheckContext):
    d = ctx.draft
    eagle = d.eagle_aux_hidden_state_layer_ids
    if not isinstance(eagle, list) or not all(is_int(i) for i in eagle):
        return
    ids = d.target_layer_ids
    if isinstance(ids, list) and eagle == [i + 1 for i in ids if is_int(i)] and len(eagle) == len(ids):
        return  # the EAGLE-convention spelling of the same layers
    captured = [i - 1 for i in eagle]
    wanted = f"; the DFlash ids ask for the outputs of layers {quote(ids)}" if ids is not None else ""
    yield Violation(
        f"vLLM uses eagle_aux_hidden_state_layer_ids {quote(eagle)} as written (no +1 shift): it captures the outputs of "
        f"decoder layers {quote(captured)}{wanted}",
        [ctx.dloc("eagle_aux_hidden_state_layer_ids"), ctx.dloc("target_layer_ids")],
    )


RULE = Rule(
    code="DF308",
    name="vllm-eagle-layer-ids-override",
    severity="warning",
    backends=("vllm",),
    check=check,
    what="If the draft config has `eagle_aux_hidden_state_layer_ids`, they name the same layers as the DFlash ids "
    "in EAGLE-3 convention, i.e. each equals a `target_layer_ids` entry + 1.",
    why="vLLM lets the EAGLE key override the DFlash ids and uses it without the +1 shift it applies to "
    "`target_layer_ids` (EAGLE id e = the input of layer e = the output of layer e-1); a copy of the DFlash ids "
    "there feeds the draft features one layer too early.",
    example='draft {"eagle_aux_hidden_state_layer_ids": [1, 9, 17, 25, 33], '
    '"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix="Remove `eagle_aux_hidden_state_layer_ids`, or set it to each target layer id + 1.",
)
