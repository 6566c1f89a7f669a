"""DF310: the draft mixes sliding-window and full-attention layers."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation


def check(ctx: CheckContext):
    kinds = ctx.draft.layer_types
    if not kinds or not ("sliding_attention" in kinds and "full_attention" in kinds):
        return
    n_sliding = sum(k == "sliding_attention" for k in kinds)
    yield Violation(
        f"draft has {n_sliding} sliding and {len(kinds) - n_sliding} full-attention layers: "
        "vLLM needs its V2 model runner for this",
        [ctx.dloc("layer_types")],
    )


RULE = Rule(
    code="DF310",
    name="vllm-mixed-sliding-draft-layers",
    severity="warning",
    backends=("vllm",),
    check=check,
    what="Notes a draft whose `layer_types` mix `sliding_attention` and `full_attention`.",
    why="The two kinds need separate KV-cache groups for the draft, which only vLLM's V2 model runner sets up; "
    "with the older runner such a draft does not run as trained.",
    example='draft {"layer_types": ["sliding_attention", "sliding_attention", "full_attention"], "sliding_window": 2048}',
    fix="Run a vLLM build with the V2 model runner enabled (see the vLLM docs of your version for the switch).",
)
