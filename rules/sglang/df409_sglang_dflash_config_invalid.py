"""DF409: the draft's dflash_config breaks a consistency check SGLang's DFLASH loader enforces."""

from __future__ import annotations

from typing import Any

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int
from dflash_compat.specs import MISSING, get_dotted

PAIRS = (("conv_kernel_size", "conv_group_size"), ("selector_rank", "selector_top_k"))
# SGLang draft classes that build the candidate selector (sglang/srt/models/dflash.py EntryClass).
SELECTOR_CLASSES = ("DFlash2DraftModel", "DFlash2BeamDraftModel", "MiniMaxDFlash2DraftModel")


def _nested(ctx: RuleContext, key: str) -> Any:
    value = get_dotted(ctx.draft.raw, f"dflash_config.{key}")
    return None if value is MISSING else value


def _loc(ctx: RuleContext, key: str):
    return ctx.dloc(key, f"dflash_config.{key}")


def _top_only(ctx: RuleContext, keys) -> str:
    """Keys written at the top level but not in dflash_config, where SGLang reads them."""
    top = [k for k in keys if _nested(ctx, k) is None and get_dotted(ctx.draft.raw, k) not in (MISSING, None)]
    return f" ({', '.join(top)} set only at the top level, where SGLang does not look)" if top else ""


def _problems(ctx: RuleContext):
    """(message, keys) for each check SGLang would fail."""
    for a, b in PAIRS:
        va, vb = _nested(ctx, a), _nested(ctx, b)
        if bool(va) != bool(vb):
            given, unset = (a, b) if va else (b, a)
            yield f"dflash_config sets {given} but not {unset}: SGLang needs both or neither", (a, b)
    sel = _nested(ctx, "selector_rank")
    cls = next((c for c in ctx.draft.architectures if c in SELECTOR_CLASSES), None)
    if cls and not sel:
        yield f"{cls} without dflash_config.selector_rank: SGLang's selector draft requires it", ("selector_rank",)
    mult = _nested(ctx, "output_multiplier")
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and mult <= 0:
        yield f"dflash_config.output_multiplier {mult} is not positive: SGLang refuses it", ("output_multiplier",)
    kernel, group, hidden = _nested(ctx, "conv_kernel_size"), _nested(ctx, "conv_group_size"), ctx.draft.hidden_size
    if kernel and is_int(group) and group > 0 and hidden % group:
        yield f"dflash_config.conv_group_size {group} does not divide hidden_size {hidden}", ("conv_group_size",)


def check(ctx: RuleContext):
    for message, keys in _problems(ctx):
        note = _top_only(ctx, keys)
        yield Violation(f"{message}; the DFLASH loader stops at start-up{note}", [_loc(ctx, k) for k in keys])


RULE = Rule(
    code="DF409",
    name="sglang-dflash-config-invalid",
    severity="error",
    backends=("sglang",),
    check=check,
    what="The draft's `dflash_config` passes SGLang's DFLASH checks: `conv_kernel_size` and `conv_group_size` "
    "both set or both unset, likewise `selector_rank` and `selector_top_k`; a DFlash 2 class has `selector_rank`; "
    "`output_multiplier` is positive; `conv_group_size` divides `hidden_size`.",
    why="SGLang parses these keys from `dflash_config` only (top-level copies are ignored) for every DFLASH draft, "
    "and raises a ValueError at start-up when one of the pairs is half set, the multiplier is not positive, a "
    "selector class has no selector rank, or the grouped convolution cannot split the hidden size.",
    example='draft {"hidden_size": 4096, "dflash_config": {"conv_kernel_size": 2, "selector_rank": 256, '
    '"selector_top_k": 16}} (conv_group_size missing)',
    fix="Restore the missing or wrong DFlash 2 keys inside dflash_config from the draft's training config.",
    sources=(
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "619-649", "conv and selector pairs"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "651-653", "output_multiplier > 0"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "543-551", "conv_group_size divides hidden_size"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "1267-1273", "selector class needs selector_rank"),
    ),
)
