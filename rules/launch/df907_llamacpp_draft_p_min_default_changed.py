"""DF907: llama.cpp's --spec-draft-p-min left to a default that changed between builds."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation

# llama.cpp #25792: the default went from 0.75 to 0 in build b9235
_CHANGED_IN = "b9235"


def check(ctx):
    launch = ctx.launch
    if launch.engine != "llama.cpp" or "p_min" in launch.where or not launch.settings.get("draft"):
        return
    release = ctx.engine("llama.cpp")
    version = ctx.engine_versions["llama.cpp"].requested  # the build the launch runs, bundled or not
    since = release.key(version) >= release.key(_CHANGED_IN)
    default = f"0 (0.75 before {_CHANGED_IN})" if since else f"0.75 (0 from {_CHANGED_IN} on)"
    yield Violation(f"--spec-draft-p-min not given: llama.cpp {version} defaults to {default}, so the same "
                    "command drafts differently on another build", [ctx.at()],
                    fix="State --spec-draft-p-min explicitly (0.75 keeps the behaviour of builds before b9235).")


RULE = Rule(
    code="DF907",
    name="llamacpp-draft-p-min-default-changed",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    needs=("launch",),
    what="A llama.cpp launch with a draft states --spec-draft-p-min instead of relying on its default.",
    why="The default minimum draft probability changed from 0.75 to 0 in build b9235 (llama.cpp issue #25792): "
    "a command tuned on an older build, or a draft whose published command assumed the old default, drafts "
    "more low-confidence tokens on a newer build and its acceptance changes without any error.",
    example="llama-server -m target.gguf -md draft.gguf --spec-type draft-dflash (no --spec-draft-p-min)",
    fix="Add --spec-draft-p-min with the value the deployment was measured with.",
    sources=(
        EngineSource("llama.cpp", "common/common.h", "333", "p_min defaults to 0.0"),
        EngineSource("llama.cpp", "common/arg.cpp", "4206-4212", "--spec-draft-p-min / --draft-p-min"),
    ),
)
