"""DF911: no flag facts for the engine release a launch pins."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation


def check(ctx):
    launch = ctx.launch
    if launch.engine not in ("vllm", "sglang", "llama.cpp"):
        return
    release, selected = ctx.engine(launch.engine), ctx.engine_versions[launch.engine]
    if ctx.flags(launch.engine) is not None:
        return
    have = ", ".join(release.flag_window) or "none"
    yield Violation(f"flags not judged: no facts for {launch.engine} {selected.requested} "
                    f"({selected.origin}); bundled: {have}", [ctx.at()])


RULE = Rule(
    code="DF911",
    name="launch-flags-not-judged",
    severity="info",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="The engine release a launch pins is one whose argument parser was read, so its flags can be judged.",
    why="Flags are judged only against the parser of the release that runs them; for a release without "
    "bundled facts the flags are left unjudged rather than compared with another release's.",
    example="image vllm/vllm-openai:v0.20.0",
    fix="Pin a release the checker has facts for, or add them: python -m "
    "dflash_compat.enginefacts.launch_flags vllm==VERSION=WHEEL.",
)
