"""One deployment refusal of lmdeploy's DFlash validators per option (DF470-DF474): a table, so that the lead's
deployment model can take the rows over."""

from __future__ import annotations

from typing import Callable, Optional

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

BUILDER = EngineSource("lmdeploy", "lmdeploy/pytorch/engine/config_builder.py", "224-230", "the engine runs the DFlash dist and runtime "
              "checks at start-up")


def deploy_rule(code: str, name: str, flag: str, bad: Callable[[RuleContext], Optional[str]], what: str, why: str,
                message: str, example: str, fix: str, sources: tuple[EngineSource, ...], reads: tuple[str, ...] = ()
                ) -> Rule:
    def check(ctx: RuleContext):
        value = bad(ctx)
        if value is not None:
            yield Violation(f"{flag} {value}: lmdeploy {ctx.version('lmdeploy')} stops at start-up ({message})")

    return Rule(code=code, name=name, severity="error", backends=("lmdeploy",), check=check, what=what, why=why,
                example=example, fix=fix, sources=sources, reads=reads)


__all__ = ["BUILDER", "deploy_rule"]
