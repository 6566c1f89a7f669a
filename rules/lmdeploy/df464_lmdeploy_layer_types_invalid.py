"""DF464: the draft's layer_types (as its config class leaves them) are not what lmdeploy accepts."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules.lmdeploy._lmdeploy import FROM_CONFIG, is_lmdeploy_draft, layer_types

KNOWN = ("full_attention", "sliding_attention")


def problem(types, n) -> str:
    if not isinstance(types, (list, tuple)):
        return "not a list (\"DFlash V1 requires an explicit layer_types list\")"
    if len(types) != n:
        return f"{len(types)} entries for {n} draft layers (\"layer_types length must equal num_hidden_layers\")"
    if any(not isinstance(t, str) for t in types):
        return "not all strings"
    other = sorted({t for t in types if t not in KNOWN})
    return f"unsupported types {quote(other)}" if other else ""


def check(ctx: RuleContext):
    if not is_lmdeploy_draft(ctx):
        return
    why = problem(layer_types(ctx), ctx.draft.num_hidden_layers)
    if why:
        yield Violation(f"layer_types: {why}; lmdeploy {ctx.version('lmdeploy')} stops at start-up (ValueError)",
                        locations=[ctx.dloc("layer_types", "layer_types")])


RULE = Rule(
    code="DF464",
    name="lmdeploy-layer-types-invalid",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft's layer_types is a list of `full_attention` / `sliding_attention`, one per draft layer "
    "(a Qwen3 draft without the key gets one from its config class).",
    why="lmdeploy builds each draft layer's attention from layer_types and refuses anything else.",
    example='"num_hidden_layers": 5, "layer_types": ["full_attention"]',
    fix="Give one entry per draft layer, each full_attention or sliding_attention, as the draft was trained.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "74-87", "layer_types list, length, strings, known types"), FROM_CONFIG),
    requires=("lmdeploy.draft_architectures",),
)
