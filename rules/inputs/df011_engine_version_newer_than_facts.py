"""DF011: the selected engine release is newer than the newest one whose facts dflash-compat has."""

from __future__ import annotations

from dflash_compat.checker import BACKENDS, Rule, RuleContext
from dflash_compat.rules.inputs._helpers import fallback_violations


def check(ctx: RuleContext):
    yield from fallback_violations(ctx, "newer")


RULE = Rule(
    code="DF011",
    name="engine-version-newer-than-facts",
    severity="warning",
    backends=BACKENDS,
    check=check,
    what="The engine release the check judges against (from --engine-version, the settings file's "
    "`engine-versions` table, or the version installed here) is newer than every release whose facts ship with "
    "dflash-compat.",
    why="Engines change what they accept from release to release (vLLM 0.34 removed its V1 DFlash proposer; "
    "transformers 5.25 rolls recurrent state back). The check falls back to the newest bundled facts, which "
    "may not describe the release you run.",
    example="dflash-check TARGET --draft DRAFT --engine-version vllm==0.35.0 (facts bundled up to vLLM 0.34.0)",
    fix="Run `dflash-check facts refresh --engine NAME==VERSION` to read that release's wheel into your cache, "
    "then check again; or pin a bundled release with --engine-version.",
)
