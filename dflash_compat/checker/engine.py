"""The rule engine: a rule is a predicate over the specs and the deep facts, plus its metadata and docs.

Data flows one way: specs and facts in, plain `Finding`s and one `RuleRun` per rule out. Rules never
load models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Optional, Sequence, Union

from dflash_compat.checker.findings import COMMON, Finding, Location, RuleDocs, RuleResults, RuleRun, backend_counts
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.engines.provenance import EngineSource
from dflash_compat.engines.registry import ENGINES, Versions, default_versions, satisfies
from dflash_compat.engines.store import UnknownFact
from dflash_compat.specs import DraftSpec, TargetSpec

if TYPE_CHECKING:  # the fact classes load only where facts were gathered (config-only checks stay fast)
    from dflash_compat.modelfacts import DraftWeights, ModuleFacts, Skipped

__all__ = [
    "BACKENDS",
    "COMMON",
    "FACTS",
    "SEVERITIES",
    "CheckContext",
    "CheckOptions",
    "EngineSource",
    "Rule",
    "RuleResults",
    "Violation",
    "check_rules",
    "run_rules",
    "select_rules",
    "severity_override",
]

# Every runtime a rule can speak about; `common` applies to all of them. `transformers`: transformers' own
# DFlash generation (generate(..., speculation_type="dflash")); `dflash`: z-lab's reference runtime (the
# dflash package on transformers), which smoke's torch runtime mirrors; `mlx`: the dflash MLX port on mlx-lm;
# `llama.cpp`: llama-server with a GGUF DFlash draft.
BACKENDS = ("transformers", "dflash", "vllm", "sglang", "mlx", "llama.cpp")
SEVERITIES = ("error", "warning", "info")
_SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}

# The deep facts a rule can need (`Rule.needs`); a rule whose facts were not gathered is skipped.
FACTS = {
    "modules": "the target's module tree",
    "torch-modules": "the target's transformers module tree",
    "mlx-modules": "the target's mlx-lm module tree",
    "weights": "the draft's weight headers",
    # launch-level rules (DF901-DF999) judge a launch command; only `dflash-check launch` runs them
    "launch": "a launch command (`dflash-check launch`)",
}


@dataclass(frozen=True)
class CheckContext:
    """What a rule sees: both specs, the options and the deep facts (None: not gathered, --no-deep).
    Helpers build locations from spec sources."""

    target: TargetSpec
    draft: DraftSpec
    options: CheckOptions = field(default_factory=CheckOptions)
    modules: Optional[Union[ModuleFacts, Skipped]] = None
    weights: Optional[Union[DraftWeights, Skipped]] = None
    # The engine releases this check judges against (engine_versions.select_versions); None: the newest bundled.
    versions: Optional[Versions] = None

    @property
    def engine_versions(self) -> Versions:
        return self.versions if self.versions is not None else default_versions()

    def version(self, engine: str) -> str:
        """The release of `engine` ("vllm", "transformers", ...) whose facts this check judges against."""
        return self.engine_versions.used(engine)

    def facts(self, section: str) -> dict:
        """The engine facts of one section ("vllm", "sglang", "mlx", "transformers", "speculators",
        "dflash") at the selected release of its engine."""
        from dflash_compat.engines.support import SECTION_ENGINE, engine_data

        return engine_data(section, self.version(SECTION_ENGINE[section]))

    def known(self, section: str, key: str) -> bool:
        """False when that fact could not be found in the selected release's code."""
        return key not in self.facts(section).get("unknown", {})

    def feature(self, section: str, name: str) -> bool:
        """Whether a located behaviour (a section's `features`) is in the selected release."""
        return name in self.facts(section).get("features", ())

    @property
    def module_skip(self) -> Optional[Skipped]:
        """Why the module tree could not be inspected or read (None: it was, or was not tried)."""
        if self.modules is None:
            return None
        from dflash_compat.modelfacts import Skipped

        return self.modules if isinstance(self.modules, Skipped) else self.modules.skipped

    @property
    def weights_skip(self) -> Optional[Skipped]:
        """Why the draft's weight headers could not be read (None: they were, or were not tried)."""
        if self.weights is None:
            return None
        from dflash_compat.modelfacts import Skipped

        return self.weights if isinstance(self.weights, Skipped) else None

    def missing(self, fact: str) -> Optional[str]:
        """Why `fact` (a key of FACTS) is not available to the rules; None when it is."""
        if fact not in FACTS:
            raise KeyError(f"unknown fact {fact!r}; expected one of {', '.join(FACTS)}")
        if fact == "launch":
            return "only `dflash-check launch` reads launch commands"
        if fact == "weights":
            if self.weights is not None and self.weights_skip is None:
                return None
            reason = self.weights_skip.reason if self.weights is not None else "--no-deep"
            return f"the draft's weight headers were not read ({reason})"
        m, skip = self.modules, self.module_skip
        if m is None or skip is not None:
            return f"the target's modules were not inspected ({skip.reason if skip else '--no-deep'})"
        wanted = {"torch-modules": "torch", "mlx-modules": "mlx"}.get(fact)
        if wanted and m.framework != wanted:
            names = {"torch": "transformers", "mlx": "mlx-lm"}
            return f"the target's modules were inspected with {names[m.framework]}, not {names[wanted]}"
        return None

    def has(self, fact: str) -> bool:
        """Whether a deep fact was gathered: "modules" (target tree), "weights" (draft headers), ..."""
        return self.missing(fact) is None

    @property
    def tree(self) -> ModuleFacts:
        """The module facts (built, maybe partly: groups may be None); a rule that declares
        needs=("modules",) runs only when they were gathered."""
        if self.modules is None or self.module_skip is not None:
            raise LookupError("no module facts: declare needs=('modules',) or test ctx.has('modules')")
        return self.modules

    @property
    def headers(self) -> DraftWeights:
        """The draft's weight facts; a rule that declares needs=("weights",) runs only when they were read."""
        if self.weights is None or self.weights_skip is not None:
            raise LookupError("no weight facts: declare needs=('weights',) or test ctx.has('weights')")
        return self.weights

    def tloc(self, fld: str, key: Optional[str] = None) -> Location:
        """Location of a target field (key defaults to the key it was read from). A source of the
        form `generation_config.json:eos_token_id` points into that file."""
        where = key or self.target.key(fld)
        file, sep, rest = where.partition(":")
        if sep and file.endswith(".json"):
            return Location(artifact="target", file=file, key=rest)
        return Location(artifact="target", file=self.target.config_file, key=where)

    def dloc(self, fld: str, key: Optional[str] = None) -> Location:
        return Location(artifact="draft", file=self.draft.config_file, key=key or self.draft.key(fld))

    def module_loc(self, path: str) -> Location:
        """A location inside the target's module tree (deep checks)."""
        return Location(artifact="target", file="<module tree>", key=path)

    def tensor_loc(self, name: str, file: str = "model.safetensors") -> Location:
        return Location(artifact="draft", file=file, key=name)


@dataclass(frozen=True)
class Violation:
    """One problem a rule's check found. `fix` / `severity` override the rule's defaults."""

    message: str
    locations: Sequence[Location] = ()
    fix: Optional[str] = None
    severity: Optional[str] = None
    # The engines this violation speaks for, a subset of the rule's backends (empty: all of them).
    # A rule whose engines behave differently (one fails, one guesses, one is fine) says so per engine;
    # a common rule's finding concerns every engine, so there the subset is ignored.
    backends: Sequence[str] = ()

    def speaks_for(self, backend: str) -> bool:
        return not self.backends or backend == COMMON or backend in self.backends


@dataclass(frozen=True)
class Rule:
    """A contract rule. The four doc fields are the rule's documentation everywhere it is shown."""

    code: str
    name: str
    severity: str
    backends: tuple[str, ...]
    check: Callable[[CheckContext], Iterable[Violation]]
    what: str
    why: str
    example: str
    fix: str
    # The deep facts (keys of FACTS) the rule reads; it is skipped when one was not gathered.
    needs: tuple[str, ...] = ()
    # The engine code this rule's verdict rests on (every rule that speaks for an engine has some).
    sources: tuple[EngineSource, ...] = ()
    # The engine releases the rule holds for, engine -> spec (">=0.34.0", "<0.34.0", ">=5.22,<5.25"): for a
    # backend whose engine's selected release is outside it the rule is not run (RuleRun not-applicable).
    versions: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Facts the verdict needs ("vllm.draft_v1_refused"): unknown at the selected release -> one info
    # finding "not judged for vllm X" instead of a verdict.
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in FACTS]
        if unknown:  # a misspelt fact would otherwise skip the rule for ever
            raise ValueError(f"{self.code}: needs {unknown}, not facts ({', '.join(FACTS)})")
        for engine, spec in self.versions.items():
            if engine not in ENGINES:
                raise ValueError(f"{self.code}: versions names {engine!r}, not an engine ({', '.join(ENGINES)})")
            satisfies(engine, "0", spec)  # a malformed spec fails here, at import

    def applies_to(self, backends: Sequence[str]) -> list[str]:
        if COMMON in self.backends:
            return [COMMON]
        return [b for b in self.backends if b in backends]

    @property
    def docs(self) -> RuleDocs:
        return RuleDocs(what=self.what, why=self.why, example=self.example, fix=self.fix, sources=self.sources,
                        versions=tuple(f"{e}{spec}" for e, spec in self.versions.items()))

    def outside(self, backend: str, versions: Versions) -> Optional[str]:
        """Why the rule does not hold for `backend` at the selected releases (None: it does)."""
        for engine, spec in self.versions.items():
            if backend != COMMON and backend not in ENGINES[engine].backends:
                continue
            used = versions.used(engine)
            if not satisfies(engine, used, spec):
                return f"{engine} {used}: the rule holds for {engine}{spec}"
        return None


def _matches(code: str, patterns: Sequence[str]) -> bool:
    return any(code == p or code.startswith(p) for p in patterns)


def select_rules(
    rules: Sequence[Rule], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[Rule]:
    """`--select` keeps codes matching a code or prefix (all when empty); `--ignore` drops them."""
    sel = [p.upper() for p in select]
    ign = [p.upper() for p in ignore]
    for flag, patterns in (("--select", sel), ("--ignore", ign)):
        unknown = [p for p in patterns if not any(_matches(r.code, [p]) for r in rules)]
        if unknown:
            from dflash_compat.exceptions import InputError

            raise InputError(f"{flag} {', '.join(unknown)} matches no rule code (codes look like DF101; "
                             "`dflash-check rules` lists them)")
    return [r for r in rules if (not sel or _matches(r.code, sel)) and not _matches(r.code, ign)]


def _sort_key(f: Finding) -> tuple:
    locs = tuple((loc.artifact, loc.file, loc.key) for loc in f.locations)
    return (_SEVERITY_ORDER[f.severity], f.code, f.backend, f.message, locs)


def severity_override(code: str, severity: Mapping[str, str]) -> Optional[str]:
    """The level the user set for `code` (an exact code or the longest matching prefix); None: the rule's own."""
    matches = [p for p in severity if code.startswith(p)]
    return severity[max(matches, key=len)] if matches else None


def judged_for(rule: Rule, backend: str, versions: Versions) -> dict[str, str]:
    """The engine releases a finding of `rule` on `backend` was judged for: the engines whose code speaks
    for the backend (all of the rule's engines for a common finding), among those the rule cites or
    restricts, each at its selected release."""
    engines = {src.engine for src in rule.sources} | set(rule.versions)
    return {e: versions.used(e) for e in ENGINES if e in engines and e in versions
            and (backend == COMMON or backend in ENGINES[e].backends)}


def _run_one(ctx: CheckContext, rule: Rule, backends: Sequence[str],
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


def _unknown_facts(ctx: CheckContext, rule: Rule) -> list[tuple[str, str]]:
    """(why, command) per fact the rule `requires` that is unknown at the selected release. A fact the rule
    reads without declaring it gives the same when it is read (UnknownFact, engine_store.Facts)."""
    from dflash_compat.engines.support import SECTION_ENGINE

    out = []
    for fact in rule.requires:
        section, _, key = fact.partition(".")
        if not ctx.known(section, key):
            engine = SECTION_ENGINE[section]
            out.append(_not_judged(UnknownFact(engine, ctx.version(engine), key, ctx.facts(section)["unknown"][key])))
    return out


def check_rules(ctx: CheckContext, rules: Sequence[Rule], backends: Sequence[str],
                severity: Mapping[str, str] = MappingProxyType({})) -> RuleResults:
    """Run every rule that applies to a selected backend and has its facts; record what happened to each.
    `severity` maps a code or code prefix to the level its findings get (error, warning, info), or to
    "ignore" to leave the rule out as `--ignore` does."""
    runs: list[RuleRun] = []
    findings: list[Finding] = []
    for rule in rules:
        forced = severity_override(rule.code, severity)
        if forced == "ignore" or "launch" in rule.needs:  # launch rules run in `dflash-check launch` only
            continue
        run, found = _run_one(ctx, rule, backends, forced)
        runs.append(run)
        findings.extend(found)
    findings.sort(key=_sort_key)  # deterministic output
    return RuleResults(findings=findings, rules=runs, counts={b: backend_counts(findings, runs, b) for b in backends})


def run_rules(ctx: CheckContext, rules: Sequence[Rule], backends: Sequence[str]) -> list[Finding]:
    """Only the findings of `check_rules`, sorted."""
    return check_rules(ctx, rules, backends).findings
