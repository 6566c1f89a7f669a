"""DF469: an attention-sink-bias draft; lmdeploy refuses it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft, nested


def check(ctx: RuleContext):
    cfg = nested(ctx)
    key = "dflash_config.attention_sink_bias" if "attention_sink_bias" in cfg else "add_swa_attention_sink_bias"
    value = cfg.get("attention_sink_bias", ctx.draft.raw.get("add_swa_attention_sink_bias", False))
    if not is_lmdeploy_draft(ctx) or not value:
        return
    yield Violation(f"{key} is set: lmdeploy {ctx.version('lmdeploy')} stops at start-up (ValueError \"DFlash "
                    "attention-sink bias checkpoints are not supported yet\")",
                    locations=[ctx.dloc("attention_bias", key)])


RULE = Rule(
    code="DF469",
    name="lmdeploy-attention-sink-refused",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft has no attention-sink bias (dflash_config.attention_sink_bias, else "
    "add_swa_attention_sink_bias).",
    why="lmdeploy's DFlash attention has no sink bias and refuses such checkpoints.",
    example='"dflash_config": {"attention_sink_bias": true}',
    fix="Serve this draft with an engine that runs attention sinks.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "126-127", "attention-sink bias: ValueError"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
