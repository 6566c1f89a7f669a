"""DF814: llama.cpp's converter has no DFlash class for the draft's architecture."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote_items
from dflash_compat.rules.llamacpp._helpers import CONVERT, entry_src, facts


def check(ctx: RuleContext):
    d = ctx.draft
    if d.gguf is not None or not d.architectures:
        return
    conv = facts(ctx)["converter_architectures"]
    if any(conv.get(a) == "dflash" for a in d.architectures if isinstance(a, str)):
        return
    known = sorted(a for a, arch in conv.items() if arch == "dflash")
    yield Violation(
        f"{CONVERT} converts DFlash drafts of {quote_items(known)} only, not {quote_items(d.architectures)}: "
        "this draft cannot be made into a GGUF llama.cpp loads",
        [ctx.dloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF814",
    name="llamacpp-draft-not-convertible",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A checkpoint draft's `architectures` names a class the build's convert_hf_to_gguf.py converts into a "
    "`dflash` GGUF (read from conversion/*.py).",
    why="llama.cpp loads drafts as GGUF files of architecture dflash, which only the converter's DFlash (and "
    "DSpark) classes write. Other draft families (speculators, XPress, LiLiCorr, ...) have no converter path.",
    example='draft {"architectures": ["DFlashSpeculator"], "speculators_model_type": "dflash"}',
    fix="Use a z-lab-layout draft (`dflash-check convert DRAFT --to zlab` for speculators drafts) and convert that.",
    sources=(entry_src("converter_architectures", "DFlashDraftModel"),),
)
