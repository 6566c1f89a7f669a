"""DF307: the draft's tensor-parallel size cannot split the draft in vLLM."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation


def check(ctx: RuleContext):
    o, d = ctx.options, ctx.draft
    tp = o.tp
    dtp = o.draft_tp if o.draft_tp is not None else tp
    if dtp not in (1, tp):
        yield Violation(f"draft tensor-parallel size {dtp} is neither 1 nor the target's {tp}: vLLM stops at start-up")
        return
    if dtp == 1:
        return
    heads, kv = d.num_attention_heads, d.num_key_value_heads
    if heads is not None and heads % dtp:
        yield Violation(
            f"draft num_attention_heads {heads} is not divisible by draft tensor-parallel size {dtp}",
            [ctx.dloc("num_attention_heads")],
        )
    if kv is not None and (kv % dtp if kv >= dtp else dtp % kv):
        yield Violation(
            f"draft num_key_value_heads {kv} can be neither split nor replicated over {dtp} ranks",
            [ctx.dloc("num_key_value_heads")],
        )


RULE = Rule(
    code="DF307",
    name="vllm-tensor-parallel-invalid",
    severity="error",
    backends=("vllm",),
    check=check,
    reads=("draft_tp", "tp"),
    what="The draft's tensor-parallel size (`--draft-tp`, default `--tp`) is 1 or the target's, and splits the "
    "draft's heads: attention heads divisible by it, KV heads divisible by it (or dividing it, when replicated).",
    why="vLLM shards the draft's attention by heads across its ranks and only supports running the draft on one "
    "rank or on the target's ranks; other sizes fail at start-up.",
    example="--tp 4 --draft-tp 2, or a draft with 20 attention heads at --tp 8",
    fix="Use --draft-tp 1 (the draft is small) or the target's TP size when the draft's heads divide evenly.",
    sources=(
        EngineSource("vllm", "vllm/config/speculative.py", "1851-1870", "draft TP: unset = target TP; else 1 or it"),
        EngineSource("vllm", "vllm/config/model.py", "1557-1564", "attention heads divisible by the TP size"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash.py", "189-197", "KV heads split or replicated"),
    ),
)
