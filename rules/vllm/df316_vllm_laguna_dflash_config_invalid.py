"""DF316: a Laguna DFlash draft config vLLM's Laguna loader refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import is_int


def check(ctx: RuleContext):
    d, t = ctx.draft, ctx.target
    if d.format != "laguna-dflash":
        return
    raw = d.raw
    types, n = raw.get("layer_types"), raw.get("num_hidden_layers")
    if types is None:
        yield Violation("the Laguna DFlash draft has no layer_types: vLLM stops at load (\"Laguna DFlash config "
                        "requires `layer_types`.\")", [ctx.dloc("num_hidden_layers")])
    elif isinstance(types, list) and is_int(n) and len(types) != n:
        yield Violation(f"layer_types has {len(types)} entries for num_hidden_layers {n}: vLLM stops at load",
                        [ctx.dloc("layer_types"), ctx.dloc("num_hidden_layers")])
    elif isinstance(types, list) and len({str(x) for x in types}) > 1:
        yield Violation(f"layer_types mixes {quote(sorted({str(x) for x in types}))}: vLLM's Laguna DFlash drafter "
                        "needs one attention kind for every layer and stops at load (NotImplementedError)",
                        [ctx.dloc("layer_types")])
    dv = raw.get("draft_vocab_size")
    if dv is None:
        yield Violation("the Laguna DFlash draft has no draft_vocab_size: vLLM stops at load (\"Laguna DFlash "
                        "config requires `draft_vocab_size`.\")", [ctx.dloc("vocab_size")])
    elif t.vocab_size is not None and dv != t.vocab_size:
        yield Violation(f"draft_vocab_size {quote(dv)} != the target's vocab_size {t.vocab_size}: Laguna DFlash "
                        "projects with the target's lm_head and vLLM stops at load",
                        [ctx.dloc("draft_vocab_size"), ctx.tloc("vocab_size")])


RULE = Rule(
    code="DF316",
    name="vllm-laguna-dflash-config-invalid",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A Laguna DFlash draft (`LagunaForCausalLM` / `DFlashLagunaForCausalLM` under method dflash) has "
    "`layer_types` with one entry per draft layer, all of one kind, and a `draft_vocab_size` equal to the "
    "target's vocabulary size.",
    why="vLLM's Laguna DFlash loader builds every draft layer with the same attention flavour, taken from "
    "`layer_types`, and shares the target's output head; it refuses a config without `layer_types`, with a "
    "length other than `num_hidden_layers`, with mixed kinds, without `draft_vocab_size`, or whose "
    "`draft_vocab_size` is not the target's vocabulary size.",
    example='draft {"architectures": ["LagunaForCausalLM"], "layer_types": ["sliding_attention", '
    '"full_attention"], "draft_vocab_size": 100352}',
    fix="Restore layer_types and draft_vocab_size from the draft's published config; pair the draft with the "
    "target it was trained for.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/laguna_dflash.py", "45-60", "layer_types checks"),
        EngineSource("vllm", "vllm/model_executor/models/laguna_dflash.py", "244-256",
                     "draft_vocab_size required, equal to the target vocabulary"),
    ),
)
