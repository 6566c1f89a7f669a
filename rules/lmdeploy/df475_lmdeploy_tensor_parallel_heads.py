"""DF475: the tensor-parallel size does not divide the target's or the draft's heads; lmdeploy asserts."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def _why(heads, kv, tp) -> str:
    if heads and heads % tp:
        return f"{heads} attention heads"
    if kv and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        return f"{kv} key/value heads"
    return ""


def check(ctx: RuleContext):
    tp = ctx.options.tp
    if tp == 1:
        return
    for who, spec, loc in (("target", ctx.target, ctx.tloc("num_attention_heads")),
                           ("draft", ctx.draft, ctx.dloc("num_attention_heads"))):
        why = _why(spec.num_attention_heads, spec.num_key_value_heads, tp)
        if why:
            yield Violation(f"--tp {tp} does not fit the {who}'s {why}: lmdeploy {ctx.version('lmdeploy')} stops "
                            "with an AssertionError while reading the model config", locations=[loc])


RULE = Rule(
    code="DF475",
    name="lmdeploy-tensor-parallel-heads",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="`--tp` divides the attention heads of the target and of the draft, and divides (or is a multiple of) "
    "their key/value heads.",
    why="lmdeploy asserts it for every model it reads, the draft included: the draft is built with the target's "
    "distribution settings.",
    example="--tp 3 with 32 attention heads",
    fix="Use a tensor-parallel size that divides both models' heads (a power of two usually does).",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "605-610", "heads % tp == 0; kv heads divide or are divided by tp"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "720-732", "the draft's ModelConfig is built with the same dist_config")),
    reads=("tp",),
)
