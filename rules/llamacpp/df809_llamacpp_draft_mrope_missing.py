"""DF809: an M-RoPE target with a draft GGUF converted without rope sections (old conversions)."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import cite, draft_is_gguf, gguf_loc, src

KEY = "dflash.rope.dimension_sections"


def _sections(value) -> bool:
    return isinstance(value, list) and any(is_int(v) and v for v in value)


def check(ctx: RuleContext):
    if not draft_is_gguf(ctx):
        return  # the converter writes the sections itself for an M-RoPE target
    t = ctx.target
    target_mrope = _sections(t.gguf.get("{arch}.rope.dimension_sections")) if t.gguf is not None else \
        bool(t.rope.mrope_section)
    if not target_mrope or _sections(ctx.draft.gguf.get(KEY)):
        return
    shown = t.gguf.get("{arch}.rope.dimension_sections") if t.gguf is not None else t.rope.mrope_section
    yield Violation(
        f"the target uses M-RoPE (sections {quote(shown)}) but the draft GGUF has no non-zero {KEY}: llama.cpp "
        f"runs the draft with plain NeoX RoPE ({cite(ctx, 'mrope_switch')}); text matches, but with images the "
        "draft's positions differ from the target's and acceptance collapses; a draft converted before the "
        "converter wrote sections needs converting again",
        [gguf_loc(ctx, "draft", KEY)],
    )


RULE = Rule(
    code="DF809",
    name="llamacpp-draft-mrope-missing",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    what="For a target with multimodal RoPE, the draft GGUF carries non-zero `dflash.rope.dimension_sections` "
    "(the converter writes [head_dim/2, 0, 0, 0] for such targets).",
    why="llama.cpp switches a DFlash draft to M-RoPE only when the sections are non-zero. A draft converted before "
    "the converter wrote them ropes with 1-D positions while the target uses per-axis positions for image "
    "tokens: plain text is unaffected, but acceptance falls to near zero on prompts with images.",
    example="a qwen35 target GGUF with a DFlash 2 draft GGUF converted before 2026-08-27",
    fix="Convert the draft again with the current convert_hf_to_gguf.py --target-model-dir TARGET.",
    sources=(src("mrope_switch"), src("converter_mrope")),
)
