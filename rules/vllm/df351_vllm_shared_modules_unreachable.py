"""DF351: vLLM's DFlash proposer cannot share the target's embedding or head at their paths."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._modules import vllm_reaches


def check(ctx: RuleContext):
    p = ctx.tree.paths
    # an mlx-lm tree (--framework mlx) says nothing about vLLM's model classes, which mirror transformers'
    # (mlx-lm ties the head as embed_tokens.as_linear, a path no torch model has); needs= skips the rule
    # then, and this guard keeps a direct call honest too
    if p is None or ctx.tree.framework == "mlx":
        return
    problems, locs = [], []
    if p.embed and not vllm_reaches("embed", p.embed):
        problems.append(f"the embedding is at {p.embed}, not the language model's model.embed_tokens / embedding")
        locs.append(ctx.module_loc(p.embed))
    if p.head and not vllm_reaches("head", p.head):
        problems.append(f"the head is at {p.head}, not lm_head")
        locs.append(ctx.module_loc(p.head))
    if problems:
        yield Violation(
            "vLLM's DFlash proposer takes the target's embedding and head by attribute: " + "; ".join(problems)
            + ". Without the embedding vLLM stops at load; without the head the draft keeps the one it was built "
            "with (paths from the transformers tree, which vLLM's model classes usually mirror)",
            locs,
        )


RULE = Rule(
    code="DF351",
    name="vllm-shared-modules-unreachable",
    severity="warning",
    backends=("vllm",),
    needs=("torch-modules",),  # an mlx-lm tree is not what vLLM builds: skipped, with the reason
    check=check,
    what="The target's embedding is at the language model's `model.embed_tokens` (or `.embedding`) and its head at "
    "`lm_head`, where vLLM's DFlash/EAGLE proposer takes them from.",
    why="vLLM loads the draft without an embedding or head and points it at the target's modules by attribute; "
    "other layouts (transformer.wte, gpt_neox.embed_in, model.decoder.embed_tokens) fail at load or need a "
    "model-specific patch.",
    example="a GPT-NeoX target (gpt_neox.embed_in)",
    fix="Use a target architecture vLLM supports for EAGLE-3/DFlash (its model class then exposes model.embed_tokens), "
    "or serve this target with the transformers backend.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash/utils.py", "49-73", "V2: target modules shared"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "37-77", "V2: embed_tokens / embedding"),
        EngineSource("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "1418-1435", "V1: model.embed_tokens or error"),
    ),
)
