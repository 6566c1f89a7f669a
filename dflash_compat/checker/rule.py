"""A rule: a predicate over what a check knows (`RuleContext`), plus its metadata and docs (what, why,
example, fix, the engine code it rests on, the releases it holds for). `Violation` is what a predicate
yields; the runner turns violations into findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Sequence

from dflash_compat.checker.context import FACTS, RuleContext
from dflash_compat.checker.findings import COMMON, Location, RuleDocs
from dflash_compat.engines.registry import ENGINES, Versions, satisfies
from dflash_compat.engines.store import EngineSource

__all__ = ["BACKENDS", "COMMON", "FACTS", "SEVERITIES", "EngineSource", "Rule", "Violation", "select_rules",
           "severity_override"]

# Every runtime a rule can speak about; `common` applies to all of them. `transformers`: transformers' own
# DFlash generation (generate(..., speculation_type="dflash")); `dflash`: z-lab's reference runtime (the
# dflash package on transformers), which smoke's torch runtime mirrors; `mlx`: the dflash MLX port on mlx-lm;
# `llama.cpp`: llama-server with a GGUF DFlash draft.
BACKENDS = ("transformers", "dflash", "vllm", "sglang", "mlx", "llama.cpp")
SEVERITIES = ("error", "warning", "info")
_SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}



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
    check: Callable[[RuleContext], Iterable[Violation]]
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
    # The deployment settings the rule reads (launch settings: "num_speculative_tokens", "tp", ...): in a
    # launch file its finding points at the first of them the launch writes.
    reads: tuple[str, ...] = ()

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


def severity_override(code: str, severity: Mapping[str, str]) -> Optional[str]:
    """The level the user set for `code` (an exact code or the longest matching prefix); None: the rule's own."""
    matches = [p for p in severity if code.startswith(p)]
    return severity[max(matches, key=len)] if matches else None
