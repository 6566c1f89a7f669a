"""DF912: a llama.cpp --spec-type value the build does not have."""

from __future__ import annotations

from dflash_compat.checker import Rule, Violation, located
from dflash_compat.quoting import quote, quote_items


def check(ctx):
    launch = ctx.launch
    if launch.engine != "llama.cpp" or "spec_type" in launch.unresolved:
        return
    value = launch.settings.get("spec_type")
    if not isinstance(value, str) or not value:
        return
    release = ctx.engine("llama.cpp")
    known = release.facts["spec_types"]  # common/speculative.cpp's name table at the build judged
    bad = [t for t in value.split(",") if t not in known]
    if not bad:
        return
    near = [t for t in known if t.startswith("draft-") and any(t.endswith(b.lower()) for b in bad)]
    hint = f"; did you mean {quote(near[0])}?" if len(near) == 1 else ""
    newer = [v for v in release.window if not release.at_least(v)]
    first = next((v for v in newer if bad[0] in ctx.engine("llama.cpp", v).facts.get("spec_types", ())), None)
    since = f" ({quote(bad[0])} came with {first})" if first else ""
    yield Violation(
        f"--spec-type {quote(value)}: llama.cpp {release.version} has no speculative type {quote_items(bad)} "
        f"and stops at start-up (\"unknown speculative type\", {release.where('spec_type_unknown').cite()}); its "
        f"types: {', '.join(known)}{since}{hint}",
        [ctx.at("spec_type")],
        fix=f"Use --spec-type {near[0]}." if len(near) == 1 else "Use a type the build has (draft-dflash for a "
        "DFlash draft), or a build that has this one.",
    )


RULE = Rule(
    code="DF912",
    name="llamacpp-spec-type-unknown",
    severity="error",
    backends=("llama.cpp",),
    check=check,
    needs=("launch",),
    reads=("spec_type",),
    what="Every --spec-type value of a llama.cpp launch is a speculative type of that build (read per build from "
    "common/speculative.cpp: draft-dflash from b9837, draft-dspark from b10173; b9113 still spells draft-simple "
    "`draft`).",
    why="llama-server splits --spec-type at commas and refuses any name its table does not hold, before it loads "
    "a model: `--spec-type dflash` (the value is draft-dflash), or draft-dspark on a build older than DSpark, never "
    "starts.",
    example="llama-server -m target.gguf -md draft.gguf --spec-type dflash",
    fix="Use the build's spelling (draft-dflash for a DFlash draft), or a build that has the type.",
    sources=(located("llama.cpp", "spec_types"), located("llama.cpp", "spec_type_unknown")),
)
