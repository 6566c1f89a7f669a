"""DF909: a launch setting whose value comes from a variable the file does not define."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation


def check(ctx):
    for setting, (word, names) in sorted(ctx.launch.unresolved.items()):
        shown = ", ".join(n if n.startswith(("$", "`")) else f"${n}" for n in names)
        yield Violation(f"{setting} not judged: comes from {shown}, which this file does not define",
                        [ctx.at(setting, word)])


RULE = Rule(
    code="DF909",
    name="launch-value-not-judged",
    severity="info",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="Every launch setting the rules read has a value the file itself states; one that comes from an "
    "environment variable, a command substitution or a template expression is named, not guessed.",
    why="The checker never runs the file and never invents a value: a setting it cannot read is a setting it "
    "did not check, and the report says so instead of passing it silently.",
    example="vllm serve $MODEL --tensor-parallel-size $TP (TP set by the CI environment)",
    fix="Assign the variable in the file (a default works: ${TP:-1}), or check that value with "
    "`dflash-check launch -c '...'`.",
)
