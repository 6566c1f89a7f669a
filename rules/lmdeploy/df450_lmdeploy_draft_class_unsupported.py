"""DF450: lmdeploy builds no DFlash drafter for the draft's class."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules.lmdeploy._lmdeploy import draft_class


def check(ctx: RuleContext):
    cls = draft_class(ctx)
    known = ctx.engine("lmdeploy").facts["draft_architectures"]
    if cls in known:
        return
    yield Violation(
        f"lmdeploy {ctx.version('lmdeploy')} builds its DFlash drafter only for {quote_items(known, raw=True)}; this draft's "
        f"class is {quote(cls) if cls else '(none)'}: the PyTorch engine cannot build it as a DFlash draft",
        locations=[ctx.dloc("architectures", "auto_map" if "auto_map" in ctx.draft.raw else "architectures")],
    )


RULE = Rule(
    code="DF450",
    name="lmdeploy-draft-class-unsupported",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="The draft's class (auto_map's AutoModelForCausalLM, else its first architecture) is one lmdeploy maps to "
    "its DFlash draft model.",
    why="lmdeploy picks the model class from MODULE_MAP by that name; only DFlashDraftModel maps to the DFlash "
    "draft (qwen3_dflash.py). DFlash 2, speculators-format and other families have no class there.",
    example='"architectures": ["DFlash2DraftModel"]',
    fix="Serve this draft with an engine that loads its family (vLLM, SGLang), or use a DFlashDraftModel draft.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/models/module_map.py", "349", "DFlashDraftModel -> qwen3_dflash"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/models/patch.py", "165-197", "class by auto_map, then architectures")),
    requires=("lmdeploy.draft_architectures",),
)
