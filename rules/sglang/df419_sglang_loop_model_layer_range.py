"""DF419: SGLang counts a loop model's target layers as num_hidden_layers x num_loops."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    raw = t.raw
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    loops, n = text.get("num_loops"), t.num_hidden_layers
    if not is_int(loops) or loops <= 1 or n is None:
        return
    total = n * loops
    ids = d.target_layer_ids
    over = [i for i in ids if is_int(i) and i >= total] if isinstance(ids, list) and not d.target_layer_ids_guessed \
        else []
    if over:
        yield Violation(
            f"target layer ids {over} are outside SGLang's range for this loop model: num_hidden_layers {n} x "
            f"num_loops {loops} = {total} layers; SGLang stops at start-up (\"DFLASH target_layer_ids contains an "
            "out-of-range layer id\")",
            [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
        )
    drafted = d.num_target_layers
    if is_int(drafted) and drafted != total:
        yield Violation(
            f"the draft's num_target_layers {drafted} is not num_hidden_layers {n} x num_loops {loops} = {total}: "
            f"SGLang counts every loop's layers, warns that the numbers differ and selects the capture layers "
            f"from {total}" + (" (the ids it derives differ from other engines')" if d.target_layer_ids_guessed
                               else ""),
            [ctx.dloc("num_target_layers"), ctx.tloc("num_hidden_layers")],
            severity="warning",
        )


RULE = Rule(
    code="DF419",
    name="sglang-loop-model-layer-range",
    severity="error",
    backends=("sglang",),
    check=check,
    what="For a loop target (`num_loops` > 1, e.g. Nanbeige), the draft's layer ids lie below "
    "`num_hidden_layers x num_loops` and (warning) its `num_target_layers` is that product.",
    why="SGLang runs a loop model's decoder stack `num_loops` times and numbers the captured layers across "
    "all passes, so the range it checks the ids against, and the depth it derives default ids from, is "
    "`num_hidden_layers x num_loops`. Ids beyond it stop the launch; a draft that counted only one pass gets "
    "a warning in SGLang's log and, when its ids are derived, different ids than it was trained with.",
    example='target {"num_hidden_layers": 22, "num_loops": 2}, draft {"num_target_layers": 22}',
    fix="Give the draft the ids (and num_target_layers) it was trained with, counted across the loops.",
    sources=(
        EngineSource("sglang", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py",
                     "223-250", "target layers = num_hidden_layers x num_loops; mismatch warned; ids resolved"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "568-585",
                     "ids derived from the runtime count, or checked against it"),
        EngineSource("sglang", "sglang/srt/models/nanbeige.py", "353-356", "loop model: ids in [0, N x loops)"),
    ),
)
