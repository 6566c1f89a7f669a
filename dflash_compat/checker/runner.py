"""The one rule runner: every selected rule that applies to a selected backend, at the selected engine
releases, with its facts (deep facts, the pair, a launch line) and its engine facts known; a record of
what happened to each rule (ran, skipped and why, not applicable) and the findings, sorted.

Pair rules and launch rules run here alike: version gates (`Rule.versions`), facts a rule `requires`,
unknown facts read while judging (one "not judged" info instead of a verdict) and `judged_for` apply to
both."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from dflash_compat.checker.context import RuleContext
from dflash_compat.checker.findings import COMMON, Finding, RuleResults, RuleRun, backend_counts
from dflash_compat.checker.rule import _SEVERITY_ORDER, Rule, severity_override
from dflash_compat.engines.registry import ENGINES, Versions
from dflash_compat.engines.store import UnknownFact

__all__ = ["check_rules", "judged_for", "run_rules"]


def _sort_key(f: Finding) -> tuple:
    locs = tuple((loc.artifact, loc.file, loc.key) for loc in f.locations)
    return (_SEVERITY_ORDER[f.severity], f.code, f.backend, f.message, locs)


def judged_for(rule: Rule, backend: str, versions: Versions) -> dict[str, str]:
    """The engine releases a finding of `rule` on `backend` was judged for: the engines whose code speaks
    for the backend (all of the rule's engines for a common finding), among those the rule cites or
    restricts, each at its selected release."""
    engines = {src.engine for src in rule.sources} | set(rule.versions)
    return {e: versions.used(e) for e in ENGINES if e in engines and e in versions
            and (backend == COMMON or backend in ENGINES[e].backends)}


def _run_one(ctx: RuleContext, rule: Rule, backends: Sequence[str],
             forced: Optional[str] = None) -> tuple[RuleRun, list[Finding]]:
    """Run one rule; `forced` (a user's severity override) replaces the rule's and its violations' levels."""
    run = dict(code=rule.code, name=rule.name, severity=forced or rule.severity, backends=tuple(rule.backends),
               docs=rule.docs)
    targets = rule.applies_to(backends)
    if not targets:
        return RuleRun(**run, status="not-applicable", reason="no selected backend"), []
    versions = ctx.engine_versions
    outside = {b: why for b in targets if (why := rule.outside(b, versions)) is not None}
    targets = [b for b in targets if b not in outside]
    if not targets:
        return RuleRun(**run, status="not-applicable", reason="; ".join(dict.fromkeys(outside.values()))), []
    missing = next(((fact, why) for fact in rule.needs if (why := ctx.missing(fact)) is not None), None)
    if missing is None and "launch" not in rule.needs and not ctx.has_pair:  # a pair rule without the pair
        missing = ("pair", ctx.pair_skipped or "the pair was not read")
    if missing is not None:
        return RuleRun(**run, status="skipped", missing=missing[0], reason=missing[1]), []
    unknown = _unknown_facts(ctx, rule)
    if not unknown:
        try:
            found = [
                Finding(code=rule.code, name=rule.name, severity=forced or violation.severity or rule.severity,
                        backend=backend, message=violation.message, fix=violation.fix or rule.fix,
                        locations=list(violation.locations), judged_for=judged_for(rule, backend, versions))
                for violation in rule.check(ctx)
                for backend in targets
                if violation.speaks_for(backend)
            ]
            return RuleRun(**run, status="ran"), found
        except UnknownFact as e:  # a fact read while judging: unknown at the selected release
            unknown = [_not_judged(e)]
    found = [Finding(code=rule.code, name=rule.name, severity="info", backend=backend,
                     message=f"not judged for {why}", fix=f"Extract facts for that release: {cmd}",
                     judged_for=judged_for(rule, backend, versions))
             for backend in targets for why, cmd in unknown]
    return RuleRun(**run, status="skipped", reason="; ".join(why for why, _ in unknown)), found


def _not_judged(e: UnknownFact) -> tuple[str, str]:
    """(why, command) for a fact unknown at a release: why reads "vllm 0.35.0: FACT unknown (reason)"."""
    from dflash_compat.engines.registry import refresh_command

    return (str(e), f"`{refresh_command(e.engine, e.version)}` after updating dflash-compat (its readers may "
            "know that release's layout)")


def _unknown_facts(ctx: RuleContext, rule: Rule) -> list[tuple[str, str]]:
    """(why, command) per fact the rule `requires` ("ENGINE.FACT") that is unknown at the selected release. A
    fact the rule reads without declaring it gives the same when it is read (UnknownFact, engines.store.Facts)."""
    out = []
    for fact in rule.requires:
        engine, _, key = fact.partition(".")
        release = ctx.engine(engine)
        if not release.known(key):
            out.append(_not_judged(UnknownFact(engine, release.version, key, release.unknown_why(key))))
    return out


def check_rules(ctx: RuleContext, rules: Sequence[Rule], backends: Sequence[str],
                severity: Mapping[str, str] = MappingProxyType({})) -> RuleResults:
    """Run every rule that applies to a selected backend and has its facts; record what happened to each.
    `severity` maps a code or code prefix to the level its findings get (error, warning, info), or to
    "ignore" to leave the rule out as `--ignore` does."""
    runs: list[RuleRun] = []
    findings: list[Finding] = []
    for rule in rules:
        forced = severity_override(rule.code, severity)
        if forced == "ignore" or ("launch" in rule.needs and ctx.launch is None):  # launch rules judge a launch
            continue
        run, found = _run_one(ctx, rule, backends, forced)
        runs.append(run)
        findings.extend(found)
    findings.sort(key=_sort_key)  # deterministic output
    return RuleResults(findings=findings, rules=runs, counts={b: backend_counts(findings, runs, b) for b in backends})


def run_rules(ctx: RuleContext, rules: Sequence[Rule], backends: Sequence[str]) -> list[Finding]:
    """Only the findings of `check_rules`, sorted."""
    return check_rules(ctx, rules, backends).findings
