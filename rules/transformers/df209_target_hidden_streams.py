"""DF209: the target's decoder layers carry several residual streams (hyper-connections), so the hidden states
a DFlash draft is conditioned on are [batch, seq, streams, hidden], not [batch, seq, hidden]."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import text_int

HF_HC_STREAMS = EngineSource(
    "transformers", "transformers/models/hy_v4/modeling_hy_v4.py", "834",
    "the embeddings are expanded to hc_mult residual streams: every layer's hidden states are "
    "[batch, seq, hc_mult, hidden] (DeepSeek-V4 modeling_deepseek_v4.py:1356, GLM-5-Next modeling_glm5_next.py:1590)",
    version="5.25.0")
HF_HC_COLLAPSE = EngineSource(
    "transformers", "transformers/models/hy_v4/modeling_hy_v4.py", "850",
    "only the final hc_head collapses the streams, after the last layer", version="5.25.0")
REF_FEATURES = EngineSource("dflash", "dflash/model.py", "37-43",
                            "extract_context_feature concatenates the selected layers' hidden states on the last axis")
REF_KV_CAT = EngineSource("dflash", "dflash/model.py", "384-389",
                          "the context keys/values (from those features) are concatenated with the block's 3-D ones")
HF_NATIVE_KV_CAT = EngineSource(
    "transformers", "transformers/models/muse_glimmer_assistant/modeling_muse_glimmer_assistant.py", "179-181",
    "the assistant concatenates the target's context hidden states with the block's on the sequence axis",
    version="5.25.0")

# The config key giving the number of residual streams (hyper-connections / mHC).
STREAMS_KEY = "hc_mult"


def check(ctx: RuleContext):
    key, n = text_int(ctx, STREAMS_KEY)
    if n is None or n <= 1:
        return
    yield Violation(
        f"the target keeps {n} residual streams per token ({key} = {n}, hyper-connections): each layer's hidden "
        f"states are [batch, seq, {n}, hidden] ({HF_HC_STREAMS.cite()}), but the draft is conditioned on "
        f"[batch, seq, hidden] features and concatenates them with its block's ({REF_FEATURES.cite()}; "
        "transformers' assistant alike, see `dflash-check rule DF209`): the runtime stops with \"Tensors must have same number of dimensions: got 4 "
        "and 3\"",
        [ctx.tloc(STREAMS_KEY, key=key)],
    )


RULE = Rule(
    code="DF209",
    name="target-hidden-streams",
    severity="error",
    backends=("transformers", "dflash"),
    check=check,
    what="The target's layer outputs are one hidden vector per token: its config has no `hc_mult` above 1 "
    "(hyper-connections, which keep several residual streams per token: DeepSeek-V4, GLM-5-Next, HY-V4).",
    why="A DFlash draft reads the target's hidden states after the selected layers as [batch, seq, hidden] "
    "features. With hyper-connections every layer passes [batch, seq, hc_mult, hidden] on and only the final "
    "head collapses the streams, so the features have one axis too many: the dflash reference and transformers' "
    "native generate(speculation_type=\"dflash\") both stop with a shape error (run here on tiny HY-V4 and "
    "DeepSeek-V4 targets, transformers 5.25.0, dflash 0.1.0). vLLM and SGLang are not judged by this rule.",
    example='target {"model_type": "hy_v4", "hc_mult": 4}',
    fix="Use a draft runtime that collapses the streams before conditioning the draft (none of the reference "
    "runtimes does), or a target without hyper-connections.",
    sources=(HF_HC_STREAMS, HF_HC_COLLAPSE, REF_FEATURES, REF_KV_CAT, HF_NATIVE_KV_CAT),
)
