"""DF128: `speculators convert` would drop this draft's last-layer id and fail on fc.weight."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules._sources import SPEC_CONVERT, SPEC_FC

SPEC_SAVE = EngineSource("speculators", "speculators/convert/dflash/converter.py", "212-230",
                         "load_state_dict(strict=False): a size mismatch still raises; fc sliced only for fused qkv")
SPEC_CLI = EngineSource("speculators", "speculators/cli/convert.py", "54-66",
                        "--algorithm-kwargs '{\"aux_hidden_state_layer_ids\": [...]}' for DFlash")
SPEC_SLICE = EngineSource("speculators", "speculators/convert/dflash/converter.py", "192-200",
                          "fused-qkv checkpoints: fc.weight sliced to the first len(aux) x hidden columns")


def check(ctx: RuleContext):
    d, n = ctx.draft, ctx.target.num_hidden_layers
    ids = d.target_layer_ids
    if d.is_speculators or d.target_layer_ids_guessed or not isinstance(ids, list) or not n:
        return
    if not any(is_int(i) and i == n - 1 for i in ids):
        return
    kept = [i + 1 for i in ids if is_int(i) and i + 1 != n]
    yield Violation(
        f"target layer id {n - 1} is the target's last layer: `speculators convert` derives aux_hidden_state_layer_ids "
        f"{quote(kept)} without it (speculators adds the last layer separately) and builds fc for {len(kept)} features, "
        f"while this checkpoint's fc.weight has {len(ids)}: the conversion stops with a size mismatch (for fused-qkv "
        "checkpoints it silently cuts fc's columns instead)",
        [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
    )


RULE = Rule(
    code="DF128",
    name="speculators-convert-drops-last-layer",
    severity="info",
    backends=("vllm",),
    check=check,
    what="Notes a z-lab draft with target layer id N-1 (the target's last layer), which the speculators converter "
    "(the route to a vLLM speculators-format checkpoint) cannot carry over.",
    why="speculators 0.9.0 converts a z-lab id into aux_hidden_state_layer_ids as id + 1, except that it drops the "
    "id whose aux value equals the target's depth, because its own training feeds the last layer separately. Its "
    "DFlash model then sizes fc for one feature fewer than the z-lab weights hold, so loading fc.weight fails with "
    "a size mismatch; a fused-qkv checkpoint is instead sliced to the first columns, dropping the last layer's "
    "weights without a word.",
    example='target {"num_hidden_layers": 36}, draft {"dflash_config": {"target_layer_ids": [1, 12, 24, 35]}}',
    fix="Pass the ids yourself: `speculators convert ... --algorithm-kwargs '{\"aux_hidden_state_layer_ids\": [...]}'` "
    "with every z-lab id + 1, N included (the converter derives them only when none are given), or serve the z-lab "
    "checkpoint directly.",
    sources=(SPEC_CONVERT, SPEC_FC, SPEC_SAVE, SPEC_SLICE, SPEC_CLI),
    # the converter rule this verdict describes, as read from the selected speculators release
    requires=("speculators.converter_drops_last_layer_id",),
)
