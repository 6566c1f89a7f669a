"""DF818: a target tokenizer llama.cpp's converter does not know (its table of BPE tokenizer hashes)."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation, located
from dflash_compat.quoting import quote
from dflash_compat.rules.llamacpp._helpers import CONVERT, DFLASH_BUILDS, cite, facts


def workaround(ctx: RuleContext) -> list[str]:
    """The one-line conversion of the target that names its pre-tokenizer (run from the llama.cpp tree)."""
    from dflash_compat.modelfacts.tokenizer import converter_argv  # a deep fact's module: loaded when judged

    return converter_argv([ctx.target.source, "--outfile", "target.gguf"], ctx.tokenizer.pre_tokenizer,
                          facts(ctx)["converter_pre_hook"])


def check(ctx: RuleContext):
    tok = ctx.tokenizer
    if ctx.target.gguf is not None or not tok.bpe or tok.chkhsh is None:
        return
    table = facts(ctx)["converter_pre_hashes"]  # get_vocab_base_pre's table at the build judged
    if tok.chkhsh in table:
        return
    version = ctx.engine("llama.cpp").version
    stops = (f"{CONVERT} of llama.cpp {version} does not know the target's tokenizer (its hash {tok.chkhsh[:16]}... "
             f"is not among the {len(table)} BPE tokenizers of {cite(ctx, 'converter_pre_hashes')}) and stops on it "
             f"(\"BPE pre-tokenizer was not recognized\", {cite(ctx, 'converter_pre_unrecognized')}); the draft's "
             "conversion too, which takes the target's tokenizer")
    pre = tok.pre_tokenizer if tok.pre_tokenizer in facts(ctx)["vocab_pre_names"] else None
    loc = ctx.tloc("vocab_size", "tokenizer.json:pre_tokenizer")
    if pre is None:
        yield Violation(f"{stops}; its pre-tokenizer is not one dflash-check can name", [loc], severity="error")
        return
    import shlex  # only where the finding prints a command (a config-only check imports nothing it does not use)

    yield Violation(
        f"{stops}. Its split is llama.cpp's {quote(pre)} (tokenizer.json's pre_tokenizer), which the converter "
        f"can be told: from the llama.cpp source tree, {shlex.join(workaround(ctx))} (the draft likewise, with "
        "--target-model-dir; `dflash-check serve --engine llama.cpp` prints both)",
        [loc],
    )


RULE = Rule(
    code="DF818",
    name="llamacpp-tokenizer-not-recognized",
    severity="warning",
    backends=("llama.cpp",),
    versions=DFLASH_BUILDS,
    check=check,
    needs=("tokenizer",),
    what="A checkpoint target's BPE tokenizer is one the build's convert_hf_to_gguf.py knows: the hash of its "
    "token ids for the converter's fixed text is in get_vocab_base_pre's table (read per build).",
    why="The converter names the GGUF's pre-tokenizer from a table of known tokenizers, keyed by that hash, and "
    "stops on any other (\"BPE pre-tokenizer was not recognized\"), for the target and for the draft, which "
    "takes the target's tokenizer. A tokenizer trained for the model (the demo pair's) is never in the table. "
    "Where its split is one llama.cpp has (GPT-2's byte-level split), the converter can be told the name: a "
    "warning with the one-line command; otherwise an error.",
    example="a target with its own byte-level BPE tokenizer (examples/demo/target) converted with "
    "convert_hf_to_gguf.py",
    fix="Convert with the one-line command the finding prints (it names the pre-tokenizer), or add the tokenizer "
    "to convert_hf_to_gguf_update.py and regenerate the table (llama.cpp's own path).",
    sources=(located("llama.cpp", "converter_pre_hashes"), located("llama.cpp", "converter_pre_unrecognized"),
             located("llama.cpp", "vocab_pre_unknown")),
)
