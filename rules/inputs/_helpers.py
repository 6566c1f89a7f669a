"""What the DF0xx rules share: one violation per engine whose selected release lies outside the bundled
window (DF011 newer, DF012 older). Not a rule: no RULE here."""

from __future__ import annotations

from dflash_compat.checker import BACKENDS, RuleContext, Violation

__all__ = ["fallback_violations"]


def fallback_violations(ctx: RuleContext, status: str):
    """One violation per engine whose selected release has no facts and lies `status` (newer / older) of
    the bundled window: the release whose facts were used instead, and the command that extracts them."""
    for engine, sel in ctx.engine_versions.items():
        if sel.status != status:
            continue
        release = ctx.engine(engine)
        info = release.info
        backends = [b for b in info.backends if b in BACKENDS]
        if not backends:
            continue
        window = release.window
        span = f"{window[0]}-{window[-1]}" if len(window) > 1 else window[0]
        where = "newer than the newest" if status == "newer" else "older than the oldest"
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
            fix=f"Extract the facts of that release: `{release.refresh_command(sel.requested)}` (it downloads the "
            f"wheel; the next check uses them), or choose a bundled release with "
            f"--engine-version {engine}=={sel.used}.",
            backends=backends,
        )
