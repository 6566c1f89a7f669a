"""DF907: llama.cpp's --spec-draft-p-min left to a default that changed between builds."""

from __future__ import annotations

from dflash_compat.checker import Rule, Violation, located


def _value(p: float) -> str:
    return f"{p:g}"


def check(ctx):
    launch = ctx.launch
    if launch.engine != "llama.cpp" or "p_min" in launch.where or not launch.settings.get("draft"):
        return
    release = ctx.engine("llama.cpp")
    default = release.facts["spec_draft_p_min_default"]  # common/common.h at the build judged
    window = release.window
    here = window.index(release.version)
    older = next((b for b in reversed(window[:here])
                  if ctx.engine("llama.cpp", b).get("spec_draft_p_min_default") != default), None)
    newer = next((b for b in window[here + 1:]
                  if ctx.engine("llama.cpp", b).get("spec_draft_p_min_default") != default), None)
    other = []
    if older is not None:
        other.append(f"{older} and older default to "
                     f"{_value(ctx.engine('llama.cpp', older).facts['spec_draft_p_min_default'])}")
    if newer is not None:
        other.append(f"{newer} and newer to {_value(ctx.engine('llama.cpp', newer).facts['spec_draft_p_min_default'])}")
    if not other:
        return  # every bundled build has this default: nothing drafts differently
    where = release.where("flag_p_min_default").cite()
    yield Violation(f"--spec-draft-p-min not given: llama.cpp {release.version} defaults to {_value(default)} "
                    f"({where}), {' and '.join(other)}, so the same command drafts differently on another build",
                    [ctx.at()],
                    fix="State --spec-draft-p-min explicitly (0.75 keeps the behaviour of builds before b9235).")


RULE = Rule(
    code="DF907",
    name="llamacpp-draft-p-min-default-changed",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    needs=("launch",),
    what="A llama.cpp launch with a draft states --spec-draft-p-min instead of relying on its default.",
    why="The default minimum draft probability changed from 0.75 to 0 in build b9235 (llama.cpp issue #25792; "
    "read per build from common/common.h: b9113 has 0.75, b9246 0): a command tuned on an older build, or a draft "
    "whose published command assumed the old default, drafts more low-confidence tokens on a newer build and its "
    "acceptance changes without any error.",
    example="llama-server -m target.gguf -md draft.gguf --spec-type draft-dflash (no --spec-draft-p-min)",
    fix="Add --spec-draft-p-min with the value the deployment was measured with.",
    sources=(located("llama.cpp", "flag_p_min_default", note="p_min's default"),
             located("llama.cpp", "flag_p_min", note="--spec-draft-p-min / --draft-p-min")),
)
