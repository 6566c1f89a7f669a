"""DF479: an lmdeploy launch asks for DFlash without `--backend pytorch`: it runs, without DFlash."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx):
    launch = ctx.launch
    if launch.engine != "lmdeploy" or launch.settings.get("algorithm") != "dflash":
        return
    backend = launch.settings.get("backend")
    if backend == "pytorch" or "backend" in launch.unresolved:
        return
    if ctx.has_pair and not ctx.pair_skipped:
        return  # the pair was checked: DF478 reports it with the target's architecture
    turbomind = ctx.engine("lmdeploy").facts.get("turbomind_architectures", ())
    archs = [a for a in (ctx.target.architectures if ctx.target is not None else []) if isinstance(a, str)]
    if archs and archs[0] not in turbomind:
        return  # lmdeploy falls back to its PyTorch engine for a model TurboMind does not take
    given = f"--backend {backend}" if backend else "no --backend (lmdeploy's default is turbomind)"
    which = f"{quote(archs[0])} is" if archs else "Qwen3 and Qwen3.5 targets are"
    yield Violation(f"{given}: {which} served by TurboMind, which logs \"speculative decoding is not supported by "
                    "turbomind\" and ignores --speculative-algorithm dflash: the server runs without DFlash",
                    [ctx.at("backend") if backend else ctx.at("algorithm")],
                    fix="Add --backend pytorch to the launch.")


RULE = Rule(
    code="DF479",
    name="lmdeploy-launch-without-pytorch-backend",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    needs=("launch",),
    what="An `lmdeploy serve api_server` launch with `--speculative-algorithm dflash` also says `--backend pytorch`.",
    why="api_server's --backend defaults to turbomind, and it keeps TurboMind for every architecture TurboMind "
    "supports (every target lmdeploy's DFlash runs: Qwen3, Qwen3.5, Qwen3.5-MoE); TurboMind serves no draft and "
    "says so in one log line. The deployment works and is as slow as without a draft.",
    example="lmdeploy serve api_server Qwen/Qwen3-8B --speculative-algorithm dflash --speculative-draft-model D",
    fix="Add --backend pytorch.",
    sources=(EngineSource("lmdeploy", "lmdeploy/cli/utils.py", "394-401", "--backend defaults to turbomind"),
             EngineSource("lmdeploy", "lmdeploy/cli/serve.py", "237-240", "not pytorch: TurboMind when it supports the model"),
             EngineSource("lmdeploy", "lmdeploy/serve/core/async_engine.py", "148-149", "TurboMind: a warning, no speculative decoding"),
             EngineSource("lmdeploy", "lmdeploy/turbomind/supported_models.py", "7-36", "the architectures TurboMind takes")),
)
