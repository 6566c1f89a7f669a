"""DF811: the draft's activation, as llama.cpp reads it: unsupported, misspelt, or silently SiLU."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules.llamacpp._helpers import CONVERT, cite, draft_is_gguf, facts, gguf_loc, src

KEY = "dflash.hidden_activation"


def check(ctx: RuleContext):
    d = ctx.draft
    allowed = facts(ctx)["hidden_activations"]
    if draft_is_gguf(ctx):
        act = d.gguf.get(KEY)
        if act is not None and act not in allowed:
            yield Violation(f"{KEY} = {quote(act)}: llama.cpp refuses to load the draft (\"unsupported DFlash hidden "
                            f"activation\", {cite(ctx, 'hidden_activation_check')})", [gguf_loc(ctx, "draft", KEY)])
        odd = d.gguf.get("dflash.hidden_act")
        if odd is not None and act is None:
            yield Violation(f"the draft GGUF spells the key dflash.hidden_act = {quote(odd)}; llama.cpp reads "
                            f"{KEY} ({cite(ctx, 'hidden_activation_key')}) and runs SiLU",
                            [gguf_loc(ctx, "draft", "dflash.hidden_act")], severity="warning")
        return
    act = d.hidden_act
    if act is None or act == "silu":
        return
    yield Violation(
        f"draft hidden_act = {quote(act)}, but {CONVERT} writes no {KEY} for DFlash drafts, so llama.cpp runs "
        f"SiLU ({cite(ctx, 'hidden_activation_check')}; it knows {quote_items(allowed)})",
        [ctx.dloc("hidden_act")],
    )


RULE = Rule(
    code="DF811",
    name="llamacpp-hidden-activation",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    what="The draft's activation is one llama.cpp runs: a GGUF's `dflash.hidden_activation` (that spelling) is "
    "silu, gelu or gelu_pytorch_tanh; a checkpoint's hidden_act is silu (the converter writes no activation key "
    "for DFlash drafts).",
    why="llama.cpp refuses a DFlash draft with another activation value. Without the key it runs SiLU, so a "
    "draft trained with GELU whose converted GGUF lacks the key (or spells it dflash.hidden_act) runs the wrong "
    "activation and proposes poor tokens, with no error.",
    example='draft {"hidden_act": "gelu_pytorch_tanh"} converted with convert_hf_to_gguf.py',
    fix="Add dflash.hidden_activation with the trained activation to the GGUF (gguf-py's gguf_set_metadata.py "
    "or a writer), or use a SiLU draft.",
    sources=(src("hidden_activation_check"), src("hidden_activation_key")),
)
