"""DF511: the MLX port rolls GatedDeltaNet state back by running its own copy of the layer."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_GDN, MLX_LOOP


def check(ctx: RuleContext):
    facts, p = ctx.tree.mlx, ctx.tree.paths
    if facts is None or facts.reference_rollback != "replay":
        return
    layers_path = p.layers if p else None
    layers = [c.layer for c in facts.caches if c.module]
    shown = ", ".join(map(str, layers[:6])) + (" ..." if len(layers) > 6 else "")
    drift = ""
    if facts.gdn_normalize_qk:
        drift = (f"; mlx-lm {facts.mlx_lm_version} normalises q/k with normalize_qk, the copy with a "
                 "different epsilon, so verify logits differ slightly from mlx-lm's own and greedy output can "
                 "part from `mlx_lm.generate` at near-ties")
    yield Violation(
        f"layers {shown} keep GatedDeltaNet state: the MLX port rolls it back by replaying the accepted tokens "
        f"through its own copy of GatedDeltaNet.__call__, patched onto the class for the whole process while it "
        f"generates{drift}",
        [ctx.module_loc(f"{layers_path}.{layers[0]}" if layers_path and layers else (layers_path or ""))],
    )


RULE = Rule(
    code="DF511",
    name="mlx-replay-patches-gated-delta-net",
    severity="info",
    backends=("mlx",),
    needs=("mlx-modules",),
    check=check,
    what="Notes a Qwen3.5-style target (GatedDeltaNet linear-attention layers, mlx-lm ArraysCache) whose "
    "recurrent state the MLX port can only roll back by replaying the accepted prefix.",
    why="A recurrent state cannot be cut like a KV cache. dflash.model_mlx replaces "
    "`mlx_lm.models.qwen3_5.GatedDeltaNet.__call__` class-wide with a capturing copy of the layer's maths and "
    "re-runs the gated delta update over the accepted tokens after each verify; the copy follows an older mlx-lm, "
    "and while it is installed every Qwen3.5 model in the process runs it (measured: 4e-4 max logit difference "
    "from mlx-lm 0.32 on a float32 toy model).",
    example='an mlx-community Qwen3.5 checkpoint, {"model_type": "qwen3_5", "full_attention_interval": 4}',
    fix="Nothing to change for correctness of the rollback; to decode with mlx-lm's own layer code, use "
    "`dflash-check smoke --backend mlx` (dflash-compat replays through the installed GatedDeltaNet itself).",
    sources=(MLX_LOOP, MLX_GDN),
)
