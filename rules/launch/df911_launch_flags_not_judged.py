"""DF911: no flag facts for the engine release a launch pins."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation

# where each engine's parser is read from: a wheel (vLLM, SGLang) or a source tree (llama.cpp)
_SOURCE = {"vllm": "WHEEL", "sglang": "WHEEL", "llama.cpp": "LLAMA_CPP_SOURCE_TREE"}


def check(ctx):
    launch = ctx.launch
    if launch.engine not in _SOURCE or ctx.flags(launch.engine) is not None:
        return
    release, selected = ctx.engine(launch.engine), ctx.engine_versions[launch.engine]
    if release.info.predates_dflash(selected.requested) and launch.speculative:
        return  # DF913 says more: that release has no DFlash at all
    have = release.flag_window
    pin = f"--engine-version {launch.engine}=={have[-1]}" if have else ""
    yield Violation(f"flags not judged: no facts for {launch.engine} {selected.requested} "
                    f"({selected.origin}); bundled: {', '.join(have) or 'none'}", [ctx.at()],
                    fix=(f"Judge it at a bundled release ({pin}), or extract that release's flags: python -m "
                         f"dflash_compat.enginefacts.launch_flags {launch.engine}=={selected.requested}="
                         f"{_SOURCE[launch.engine]}."))


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
