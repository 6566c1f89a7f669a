"""DF476: with --dtype auto, a float16 target and a bfloat16 draft (or the reverse) run in two dtypes."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import is_lmdeploy_draft, resolved


def check(ctx: RuleContext):
    flag = ctx.options.lmdeploy_dtype
    if not is_lmdeploy_draft(ctx) or flag in ("float16", "bfloat16"):
        return
    t, d = resolved(ctx.target.raw, flag), resolved(ctx.draft.raw, flag)
    if t == d:
        return
    yield Violation(f"--dtype {flag or 'auto'}: the target runs in {t} and the draft in {d}; the draft computes on "
                    f"the target's {t} embeddings and hidden states with {d} weights (a dtype-mismatch crash at the "
                    "first step, lmdeploy PR #4991)",
                    locations=[ctx.tloc("torch_dtype", "torch_dtype"), ctx.dloc("torch_dtype", "torch_dtype")],
                    fix="Launch with --dtype bfloat16 (both models in bfloat16).")


RULE = Rule(
    code="DF476",
    name="lmdeploy-target-draft-dtype-mixed",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="Target and draft run in one dtype: `--dtype bfloat16` / `float16`, or configs whose dtypes resolve alike "
    "under `--dtype auto` (lmdeploy's default).",
    why="Under --dtype auto lmdeploy keeps each model's own torch_dtype, and the draft reads the target's embedding "
    "module and hidden states. Users report an fp16 target with a bf16 draft crashing (lmdeploy PR #4991).",
    example="target torch_dtype float16, draft torch_dtype bfloat16, no --dtype",
    fix="Launch with --dtype bfloat16.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "97-122", "dtype, text_config.dtype, torch_dtype; --dtype auto keeps "
                 "float16/bfloat16"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "720-732", "the draft's config read with the same --dtype"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/proposers/dflash.py", "35-36", "the draft uses the target's "
                 "embedding module")),
    reads=("dtype",),
)
