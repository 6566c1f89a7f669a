"""DF451: lmdeploy's class for the target does not hand the draft its layers' hidden states."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items


def check(ctx: RuleContext):
    facts = ctx.engine("lmdeploy").facts
    archs = [a for a in ctx.target.architectures if isinstance(a, str)]
    if not archs or any(a in facts["supported"] for a in archs):
        return
    known = [a for a in archs if a in facts["unsupported"]]
    ids = ctx.draft.target_layer_ids or []
    if known:
        how = (f"the draft then gets the final hidden state ({ctx.target.hidden_size or 'hidden'} wide) where its fc "
               f"expects {len(ids) or 'N'} layers' features: ValueError \"DFlash target hidden feature dim mismatch\" "
               "at the first step" if len(ids) != 1 else
               "with one target layer id the widths match and the draft silently reads the final hidden state "
               "instead of that layer's")
        msg = f"lmdeploy's class for {quote(known[0])} does not capture the DFlash target layers: {how}"
    else:
        msg = (f"lmdeploy {ctx.version('lmdeploy')}'s PyTorch engine has no class for {quote_items(archs)} "
               "(RuntimeError \"Can not found rewrite for architectures\")")
    yield Violation(msg, locations=[ctx.tloc("architectures", "architectures")])


RULE = Rule(
    code="DF451",
    name="lmdeploy-target-without-layer-capture",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="lmdeploy's model class for the target reads the DFlash target layer ids and returns those layers' hidden "
    "states (Qwen3, Qwen3.5 and Qwen3.5-MoE in 0.18.0).",
    why="The draft is conditioned on the target's hidden states at target_layer_ids. A class that ignores the ids "
    "returns only its final hidden state: the draft's fc refuses the width, or (one id) reads the wrong layer.",
    example='target "architectures": ["Qwen3MoeForCausalLM"] at lmdeploy 0.18.0',
    fix="Serve this pair with an engine that captures this target's layers (vLLM, SGLang), or use a target whose "
    "lmdeploy class captures them.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/models/qwen3.py", "268-270", "Qwen3 reads target_aux_hidden_state_layers"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/base.py", "143-145", "aux_hidden_states become the draft's input"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/models/qwen3_dflash.py", "357-365", "fc width check: ValueError")),
    requires=("lmdeploy.supported", "lmdeploy.unsupported"),
)
