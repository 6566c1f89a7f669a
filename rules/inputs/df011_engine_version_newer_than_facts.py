"""DF011: the selected engine release is newer than the newest one whose facts dflash-compat has."""

from __future__ import annotations

from dflash_compat.checker.engine import BACKENDS, CheckContext, Rule, Violation
from dflash_compat.engines.registry import ENGINES, bundled_versions, refresh_command


def fallback_violations(ctx: CheckContext, status: str):
    """One violation per engine whose selected release has no facts and lies `status` (newer / older) of
    the bundled window: the release whose facts were used instead, and the command that extracts them."""
    for engine, sel in ctx.engine_versions.items():
        if sel.status != status:
            continue
        backends = [b for b in ENGINES[engine].backends if b in BACKENDS]
        if not backends:
            continue
        window = bundled_versions(engine)
        span = f"{window[0]}-{window[-1]}" if len(window) > 1 else window[0]
        where = "newer than the newest" if status == "newer" else "older than the oldest"
        info = ENGINES[engine]
        if info.predates_dflash(sel.requested):  # no facts to extract: that release has no DFlash at all
            yield Violation(
                f"{engine} {sel.requested} ({sel.origin}) predates DFlash: its first release with DFlash is "
                f"{info.first_dflash}, so it cannot run this pair at all; judged with the facts of {engine} "
                f"{sel.used}, the oldest bundled release",
                [],
                fix=f"Upgrade {info.label} to {info.first_dflash} or later (bundled: {engine} {span}).",
                backends=backends, severity="error",
            )
            continue
        yield Violation(
            f"{engine} {sel.requested} ({sel.origin}) is {where} release with bundled facts ({engine} {span}); "
            f"judged with the facts of {engine} {sel.used} instead, which may not match what {sel.requested} does",
            [],
            fix=f"Extract the facts of that release: `{refresh_command(engine, sel.requested)}` (it downloads the "
            f"wheel; the next check uses them), or choose a bundled release with "
            f"--engine-version {engine}=={sel.used}.",
            backends=backends,
        )


def check(ctx: CheckContext):
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
