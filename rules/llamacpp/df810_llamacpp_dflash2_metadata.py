"""DF810: a DFlash 2 draft without the conv/selector metadata llama.cpp requires."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote_items
from dflash_compat.rules._common import is_int
from dflash_compat.rules.llamacpp._helpers import CONVERT, cite, draft_is_gguf, gguf_loc, src
from dflash_compat.specs import MISSING, get_dotted

FIELDS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
_BLOCK = "block_size"


def check(ctx: RuleContext):
    d = ctx.draft
    if draft_is_gguf(ctx):
        if "selector_hidden.weight" not in d.gguf.tensors:
            return
        keys = [f"dflash.{k}" for k in (*FIELDS, _BLOCK)]
        bad = [k for k in keys if not (is_int(d.gguf.get(k)) and d.gguf.get(k) > 0)]
        if bad:
            yield Violation(
                f"the draft GGUF holds DFlash 2 selector tensors but {quote_items(bad)} "
                f"{'is' if len(bad) == 1 else 'are'} missing or not positive: llama.cpp refuses to load it "
                f"(\"DFlash2 model is missing conv/selector metadata\", {cite(ctx, 'dflash2_metadata_check')})",
                [gguf_loc(ctx, "draft", k) for k in bad],
            )
        return
    if not d.has_v2_layers or d.is_speculators:
        return
    nested = [k for k in FIELDS if get_dotted(d.raw, f"dflash_config.{k}") is not MISSING]
    if "conv_kernel_size" in nested:
        return
    outside = [k for k in FIELDS if d.raw.get(k) is not None]
    where = f" ({quote_items(outside)} at the top level are not read)" if outside else ""
    yield Violation(
        f"a DFlash 2 draft without dflash_config.conv_kernel_size{where}: {CONVERT} writes the conv/selector keys "
        f"only from dflash_config ({cite(ctx, 'converter_v2')}), and llama.cpp refuses the converted draft "
        f"(\"missing conv/selector metadata\", {cite(ctx, 'dflash2_metadata_check')})",
        [ctx.dloc("conv_kernel_size", "dflash_config.conv_kernel_size")],
    )


RULE = Rule(
    code="DF810",
    name="llamacpp-dflash2-metadata",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="A DFlash 2 draft GGUF (one with selector tensors) holds positive dflash.conv_kernel_size, "
    "conv_group_size, selector_rank, selector_top_k and block_size; a DFlash 2 checkpoint keeps them in "
    "dflash_config, where the converter reads them.",
    why="llama.cpp builds the DFlash 2 convolutions and candidate selector from these keys and refuses to load a "
    "draft that lacks any of them. The converter copies them only from dflash_config, so a checkpoint that keeps "
    "them at the top level converts into a GGUF that does not load.",
    example='draft {"architectures": ["DFlash2DraftModel"], "conv_kernel_size": 4, "dflash_config": {...}}',
    fix="Move the DFlash 2 keys into dflash_config before converting (or add them to the GGUF).",
    sources=(src("dflash2_metadata_check"), src("converter_v2")),
)
