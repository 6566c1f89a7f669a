"""DF477: target and draft both run in float16, which users report collapses DFlash acceptance on lmdeploy."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import is_lmdeploy_draft, resolved


def check(ctx: RuleContext):
    flag = ctx.options.lmdeploy_dtype
    if not is_lmdeploy_draft(ctx):
        return
    if not (resolved(ctx.target.raw, flag) == resolved(ctx.draft.raw, flag) == "float16"):
        return
    why = "--dtype float16" if flag == "float16" else "both configs resolve to float16 under --dtype auto"
    yield Violation(f"{why}: target and draft run in float16; users report DFlash acceptance collapsing on "
                    "lmdeploy in float16 (lmdeploy PR #4991)",
                    locations=[ctx.dloc("torch_dtype", "torch_dtype")])


RULE = Rule(
    code="DF477",
    name="lmdeploy-all-fp16",
    severity="warning",
    backends=("lmdeploy",),
    check=check,
    what="The pair does not run entirely in float16 on lmdeploy.",
    why="DFlash drafts are trained in bfloat16; lmdeploy PR #4991 reports acceptance collapsing when target and "
    "draft both run in float16 (--dtype float16, float16 configs, or a missing torch_dtype, which lmdeploy reads as "
    "float16). A speed problem, not a wrong answer: the target still verifies every token.",
    example="--dtype float16",
    fix="Launch with --dtype bfloat16 on a GPU that supports it.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "108-122", "no torch_dtype: float16; auto keeps float16/bfloat16"),),
    reads=("dtype",),
)
