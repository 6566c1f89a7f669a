"""DF476: with --dtype auto, a float16 target and a bfloat16 draft (or the reverse) run in two dtypes."""

from __future__ import annotations

from dflash_compat.checker.engine import CheckContext, Rule, Violation
from dflash_compat.rules.lmdeploy._lmdeploy import is_lmdeploy_draft, src


def config_dtype(raw: dict):
    """The dtype lmdeploy reads from a config: `dtype`, then text_config's `dtype`, then `torch_dtype`."""
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    for value in (raw.get("dtype"), text.get("dtype"), raw.get("torch_dtype")):
        if value is not None:
            return value
    return None


def resolved(raw: dict, flag) -> str:
    """The dtype lmdeploy runs a model in (config.py _update_torch_dtype; the GPU's bf16 support aside)."""
    if flag in ("float16", "bfloat16"):
        return flag
    dtype = config_dtype(raw)
    return dtype if dtype in ("float16", "bfloat16") else "float16"


def check(ctx: CheckContext):
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
    sources=(src("lmdeploy/pytorch/config.py", "97-122", "dtype, text_config.dtype, torch_dtype; --dtype auto keeps "
                 "float16/bfloat16"),
             src("lmdeploy/pytorch/config.py", "720-732", "the draft's config read with the same --dtype"),
             src("lmdeploy/pytorch/spec_decode/proposers/dflash.py", "35-36", "the draft uses the target's "
                 "embedding module")),
)
