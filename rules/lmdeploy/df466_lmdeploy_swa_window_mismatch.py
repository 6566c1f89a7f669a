"""DF466: dflash_config's own window differs from the draft's sliding_window; lmdeploy refuses it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft, nested, sliding_window


def check(ctx: RuleContext):
    cfg = nested(ctx)
    key = "swa_window_size" if "swa_window_size" in cfg else "sliding_window"
    explicit = cfg.get(key)
    if not is_lmdeploy_draft(ctx) or explicit is None:
        return
    mine = None if explicit in (0, -1) else explicit
    if mine == sliding_window(ctx):
        return
    yield Violation(f"dflash_config.{key} {explicit} != the draft's sliding window {sliding_window(ctx)}: lmdeploy "
                    f"{ctx.version('lmdeploy')} stops at start-up (ValueError \"requires the SWA window to equal "
                    "ModelConfig.sliding_window\")", locations=[ctx.dloc("sliding_window", f"dflash_config.{key}")])


RULE = Rule(
    code="DF466",
    name="lmdeploy-swa-window-mismatch",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="dflash_config.swa_window_size (or dflash_config.sliding_window), when given, equals the draft's own "
    "sliding window (None when use_sliding_window is not true).",
    why="lmdeploy runs one window per model and refuses a DFlash-specific window that differs.",
    example='"sliding_window": 2048, "use_sliding_window": true, "dflash_config": {"swa_window_size": 1024}',
    fix="Make the two windows equal (the one the draft was trained with).",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "98-104", "explicit SWA window must equal the model's"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
