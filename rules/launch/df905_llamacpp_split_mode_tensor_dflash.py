"""DF905: llama.cpp's tensor split mode with a DFlash draft."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation


def check(ctx):
    launch = ctx.launch
    if launch.engine != "llama.cpp" or "split_mode" in launch.unresolved:
        return
    if str(launch.settings.get("split_mode") or "").lower() != "tensor":
        return
    spec_type = launch.settings.get("spec_type")
    # a misspelt DFlash type (`--spec-type dflash`, DF912) still means a DFlash draft
    if spec_type is not None and "dflash" not in str(spec_type).lower() or not launch.settings.get("draft"):
        return
    yield Violation("-sm tensor with a DFlash draft: llama.cpp does not refuse it at load, and a DFlash 2 draft "
                    "then aborts on a GGML_ASSERT while decoding (llama.cpp #27819)", [ctx.at("split_mode")],
                    fix="Use -sm layer (the default) for a DFlash deployment.")


RULE = Rule(
    code="DF905",
    name="llamacpp-split-mode-tensor-dflash",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    needs=("launch",),
    what="A llama.cpp launch with a DFlash draft does not split the model with -sm tensor.",
    why="The tensor split mode is experimental; the architectures it cannot run are refused at load, but the "
    "DFlash draft architecture is not on that list, so the launch starts and a DFlash 2 draft aborts on a "
    "GGML_ASSERT at the first draft step (llama.cpp issue #27819).",
    example="llama-server -m target.gguf -md dflash2-draft.gguf --spec-type draft-dflash -sm tensor",
    fix="Use -sm layer (the default) or -sm row.",
    sources=(
        EngineSource("llama.cpp", "common/arg.cpp", "2809-2825", "-sm tensor: experimental"),
        EngineSource("llama.cpp", "src/llama-arch.cpp", "1196-1232", "architectures refused with -sm tensor"),
        EngineSource("llama.cpp", "src/llama-model.cpp", "362-363", "the refusal at load"),
    ),
)
