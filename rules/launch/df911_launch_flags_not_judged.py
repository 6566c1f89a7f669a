"""DF911: no flag facts for the engine release a launch pins."""

from __future__ import annotations

from dflash_compat.checker.engine import COMMON, Rule, Violation


def check(ctx):
    # here, not at the top: only a check of a launch command needs the flag facts (start-up)
    from dflash_compat.engines.flags import bundled_versions

    launch, version = ctx.launch, ctx.version
    if ctx.flags is not None or launch.engine not in ("vllm", "sglang", "llama.cpp"):
        return
    have = ", ".join(bundled_versions(launch.engine)) or "none"
    yield Violation(f"flags not judged: no facts for {launch.engine} {version.version or '(unknown)'} "
                    f"({version.origin}); bundled: {have}", [ctx.at()])


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
