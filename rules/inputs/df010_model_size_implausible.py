"""DF010: a config gives a size no real model has (a corrupt or hostile config); nothing is built from it."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote_items
from dflash_compat.specs.sizes import oversized


def check(ctx: RuleContext):
    for who, spec, loc in (("target", ctx.target, ctx.tloc), ("draft", ctx.draft, ctx.dloc)):
        found = oversized(spec.raw)
        if found:
            yield Violation(
                f"{who} config gives {quote_items(found, raw=True)}: beyond any published model, so the "
                "config is corrupt or hostile; no model is built from it",
                [loc("", key=found[0].key)],
            )


RULE = Rule(
    code="DF010",
    name="model-size-implausible",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="Every size in the target's and the draft's config (layers, widths, vocabulary, heads, experts, in any "
    "sub-config such as vision_config) is below a cap far above every published model: 1,024 layers, hidden "
    "131,072, vocabulary 4,194,304, 4,096 heads, 16,384 experts, 65,536 layer x expert blocks.",
    why="A model is built from its config before it is checked or run; 10 million layers take minutes and "
    "gigabytes to build even without weights. A size like that is a typo, a corrupt download or a hostile file, "
    "so the deep check does not build the target (its module rules are skipped) and this finding says why.",
    example='target {"num_hidden_layers": 10000000} or {"vision_config": {"depth": 1000000}}',
    fix="Check the config against the model card and download it again; the sizes of a real model are far below "
    "these caps.",
)
