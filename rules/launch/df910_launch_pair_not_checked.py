"""DF910: a launch whose pair could not be checked."""

from __future__ import annotations

from dflash_compat.checker.engine import COMMON, Rule, Violation


def check(ctx):
    reason = getattr(ctx, "pair_skipped", None)
    if not reason:
        return
    fix = None
    if reason == "--no-pair":
        fix = "Leave out --no-pair to check the pair too."
    yield Violation(f"the pair was not checked: {reason}", [ctx.at("draft" if "draft" in ctx.launch.where else None)],
                    fix=fix)


RULE = Rule(
    code="DF910",
    name="launch-pair-not-checked",
    severity="info",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="The target and draft of each launch are checked by every rule `dflash-check TARGET --draft DRAFT` runs "
    "for that engine (GGUF files for llama.cpp: their headers); when they cannot be (a model that cannot be read, "
    "a value from a variable), "
    "the report says why.",
    why="A launch report without the pair's findings would read as a clean pair; this line marks what was not "
    "looked at.",
    example="vllm serve $MODEL --speculative-config '{\"method\": \"dflash\", \"model\": \"$DRAFT\"}'",
    fix="Make the models reachable (a local folder, or the Hub with a token) or check the pair separately with "
    "`dflash-check TARGET --draft DRAFT`.",
)
