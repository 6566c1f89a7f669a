"""DF908: the same pair launched twice in one file with different settings."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation
from dflash_compat.quoting import quote

# settings that are the pair itself or where it listens, not how it is run
_IDENTITY = {"target", "draft", "target_hf", "draft_hf", "port", "host"}


def _show(value) -> str:
    return "(not given)" if value is None else quote(value)


def check(ctx):
    launch = ctx.launch
    if not launch.target or not launch.draft:
        return
    for other in ctx.earlier:
        if (other.engine, other.target, other.draft) != (launch.engine, launch.target, launch.draft):
            continue
        keys = sorted((set(launch.settings) | set(other.settings)) - _IDENTITY)
        diff = [k for k in keys if launch.settings.get(k) != other.settings.get(k)]
        if not diff:
            continue
        shown = "; ".join(f"{k} {_show(other.settings.get(k))} -> {_show(launch.settings.get(k))}" for k in diff[:6])
        yield Violation(f"this pair is launched on line {other.line} too, with other settings ({shown}): one of "
                        "the two does not run what the other was measured with", [ctx.at()])
        return


RULE = Rule(
    code="DF908",
    name="launch-pair-launched-twice",
    severity="warning",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="A file that launches the same engine, target and draft twice launches them with the same settings.",
    why="Two launches of one pair in one deployment file (a service and its canary, a script's two branches) "
    "that differ in parallelism, quantisation or speculative tokens usually mean one was edited and the other "
    "forgotten; the acceptance and speed measured on one do not hold for the other.",
    example="a compose file whose `vllm` service has num_speculative_tokens 15 and `vllm-canary` 7",
    fix="Make the settings agree, or give the launches different drafts if they are meant to differ.",
)
