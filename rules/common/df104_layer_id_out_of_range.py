"""DF104: a target layer id is not an integer index of an existing target decoder layer."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import MAX_ITEMS, quote, quote_items
from dflash_compat.rules._common import is_int
from dflash_compat.rules._sources import MLX_HOOK, REF_FEATURES, SGL_IDS, VLLM_FC_CHECK


def check(ctx: RuleContext):
    d, n = ctx.draft, ctx.target.num_hidden_layers
    ids = d.target_layer_ids
    if not isinstance(ids, list):
        return
    written = " (written +1 in aux_hidden_state_layer_ids)" if d.is_speculators else ""
    loc = [ctx.dloc("target_layer_ids")]
    # one finding per kind of problem, however many ids have it (a hostile config may list 50,000)
    not_int = [(i, lid) for i, lid in enumerate(ids) if not is_int(lid)]
    negative = [lid for lid in ids if is_int(lid) and lid < 0]
    missing = [lid for lid in ids if is_int(lid) and n is not None and lid >= n]
    if not_int:
        which = ", ".join(f"#{i} is {quote(lid)}" for i, lid in not_int[:MAX_ITEMS])
        more = f", ... ({len(not_int) - MAX_ITEMS} more)" if len(not_int) > MAX_ITEMS else ""
        yield Violation(f"target layer id {which}{more}, not an integer", loc)
    if negative:
        yield Violation(f"target layer {_ids(negative)}{written} {_is(negative)} negative: layer ids count decoder "
                        "layers from 0", loc)
    if missing:
        yield Violation(
            f"target layer {_ids(missing)}{written} {'does' if len(missing) == 1 else 'do'} not exist: the target "
            f"has {n} decoder layers (ids 0..{n - 1})",
            [*loc, ctx.tloc("num_hidden_layers")],
        )


def _ids(ids: list) -> str:
    return f"id {ids[0]}" if len(ids) == 1 else f"ids {quote_items(ids)}"


def _is(ids: list) -> str:
    return "is" if len(ids) == 1 else "are"


RULE = Rule(
    code="DF104",
    name="layer-id-out-of-range",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="Every target layer id is an integer with 0 <= id < N, N = the target's `num_hidden_layers` "
    "(speculators ids are read with their +1 removed).",
    why="Feature i is the output of decoder layer `id`; an id the target does not have fails (SGLang ValueError at "
    "load, IndexError in the dflash reference and MLX, vLLM's feature-width ValueError at the first step), and a -1 "
    "left by a bad conversion makes the reference read hidden_states[0], the embedding output.",
    example='target {"num_hidden_layers": 28}, draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix="Use a draft trained for this target's depth; the ids cannot be remapped without retraining.",
    sources=(REF_FEATURES, MLX_HOOK, SGL_IDS, VLLM_FC_CHECK),
)
