"""DF906: a DSpark draft launched on vLLM with method "dflash"."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation


def _is_dspark(ctx) -> bool:
    draft = ctx.launch.settings.get("draft")
    if isinstance(draft, str) and "dspark" in draft.lower():
        return True
    archs = getattr(ctx.draft, "architectures", None) if ctx.draft is not None else None
    return any("DSpark" in str(a) for a in archs or ())


def check(ctx):
    launch = ctx.launch
    if launch.engine != "vllm" or launch.settings.get("method") != "dflash" or not _is_dspark(ctx):
        return
    yield Violation("method \"dflash\" with a DSpark draft: vLLM keeps an explicit method as given, loads the "
                    "DSpark checkpoint as a DFlash draft and crashes at load (vLLM #49614)", [ctx.at("method")],
                    fix="Set \"method\": \"dspark\" in --speculative-config.")


RULE = Rule(
    code="DF906",
    name="vllm-dspark-draft-as-dflash",
    severity="error",
    backends=("vllm",),
    check=check,
    needs=("launch",),
    # vLLM 0.34.0 moved the method detection out of SpeculativeConfig (per-method config modules); the
    # rule is read for the releases whose code it cites, and not run at 0.34.0 until that code is read.
    versions={"vllm": "<0.34.0"},
    what="A DSpark draft (its name or architecture says DSpark) is launched on vLLM with method \"dspark\", "
    "not \"dflash\".",
    why="vLLM detects the method from the draft's name or architecture only when none is given; an explicit "
    "\"dflash\" is kept, and a DSpark checkpoint built as a DFlash draft fails at load (vLLM issue #49614).",
    example="vllm serve T --speculative-config '{\"method\": \"dflash\", \"model\": \"org/dspark_qwen3_8b\"}'",
    fix="Use \"method\": \"dspark\" (or leave the method out and let vLLM detect it).",
    sources=(
        EngineSource("vllm", "vllm/config/speculative.py", "1433-1439", "an explicit method is kept"),
        EngineSource("vllm", "vllm/config/speculative.py", "1455-1468", "DSpark drafts detected as dspark"),
    ),
)
