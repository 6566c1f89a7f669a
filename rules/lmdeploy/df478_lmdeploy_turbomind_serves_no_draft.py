"""DF478: lmdeploy picks TurboMind (no --backend pytorch): the server runs, without DFlash."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    if ctx.options.lmdeploy_backend in (None, "pytorch"):
        return
    archs = [a for a in ctx.target.architectures if isinstance(a, str)]
    turbomind = ctx.engine("lmdeploy").facts["turbomind_architectures"]
    if archs and archs[0] not in turbomind:
        return  # lmdeploy falls back to the PyTorch engine for it
    given = "--backend turbomind (lmdeploy's default without --backend pytorch)"
    yield Violation(f"{given}: lmdeploy {ctx.version('lmdeploy')} serves "
                    f"{quote(archs[0]) if archs else 'the target'} with TurboMind, which logs \"speculative decoding is not "
                    "supported by turbomind\" and runs without the draft: the deployment works, without DFlash",
                    fix="Launch with --backend pytorch.")


RULE = Rule(
    code="DF478",
    name="lmdeploy-turbomind-serves-no-draft",
    severity="error",
    backends=("lmdeploy",),
    check=check,
    what="lmdeploy is launched with `--backend pytorch` when it is to run DFlash.",
    why="`lmdeploy serve api_server` defaults to --backend turbomind and keeps TurboMind for every architecture it "
    "supports (Qwen3 and Qwen3.5 among them); TurboMind ignores the speculative flags with one log line.",
    example="lmdeploy serve api_server Qwen/Qwen3-8B --speculative-algorithm dflash --speculative-draft-model D",
    fix="Add --backend pytorch.",
    sources=(EngineSource("lmdeploy", "lmdeploy/cli/utils.py", "394-401", "--backend defaults to turbomind"),
             EngineSource("lmdeploy", "lmdeploy/cli/serve.py", "237-240", "not pytorch: TurboMind when it supports the model"),
             EngineSource("lmdeploy", "lmdeploy/serve/core/async_engine.py", "148-149", "TurboMind: a warning, no speculative decoding"),
             EngineSource("lmdeploy", "lmdeploy/turbomind/supported_models.py", "7-36", "the architectures TurboMind takes")),
    requires=("lmdeploy.turbomind_architectures",),
    reads=("backend",),
)
