"""DF911: no flag facts for the engine release a launch pins."""

from __future__ import annotations

from dflash_compat.checker.engine import COMMON, Rule, Violation

# where each engine's parser is read from: a wheel (vLLM, SGLang) or a source tree (llama.cpp)
_SOURCE = {"vllm": "WHEEL", "sglang": "WHEEL", "llama.cpp": "LLAMA_CPP_SOURCE_TREE"}


def check(ctx):
    # here, not at the top: only a check of a launch command needs the flag facts (start-up)
    from dflash_compat.engines.flags import bundled_versions
    from dflash_compat.engines.registry import ENGINES

    launch, version = ctx.launch, ctx.version
    if ctx.flags is not None or launch.engine not in _SOURCE:
        return
    info = ENGINES.get(launch.engine)
    if version.version and info is not None and info.predates_dflash(version.version) and launch.speculative:
        return  # DF913 says more: that release has no DFlash at all
    have = bundled_versions(launch.engine)
    shown = ", ".join(have) or "none"
    v = version.version or "VERSION"
    pin = f"--engine-version {launch.engine}=={have[-1]}" if have else ""
    yield Violation(f"flags not judged: no facts for {launch.engine} {version.version or '(unknown)'} "
                    f"({version.origin}); bundled: {shown}", [ctx.at()],
                    fix=(f"Judge it at a bundled release ({pin}), or extract that release's flags: python -m "
                         f"dflash_compat.enginefacts.launch_flags {launch.engine}=={v}={_SOURCE[launch.engine]}."))


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
    "dflash_compat.enginefacts.launch_flags ENGINE==VERSION=SOURCE (a vLLM or SGLang wheel, a llama.cpp "
    "source tree).",
)
