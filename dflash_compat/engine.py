"""The rule engine: a rule is a predicate over the specs plus its metadata and documentation.

Data flows one way: specs in, plain `Finding`s out. Rules never load models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from .report import Finding, Location, facts_gathered
from .specs import DraftSpec, TargetSpec

__all__ = [
    "BACKENDS",
    "COMMON",
    "SEVERITIES",
    "CheckContext",
    "EngineSource",
    "CheckOptions",
    "Rule",
    "Violation",
    "run_rules",
    "select_rules",
]

COMMON = "common"
# Every engine a rule can speak about; `common` applies to all of them.
BACKENDS = ("transformers", "vllm", "sglang", "mlx")
SEVERITIES = ("error", "warning", "info")
_SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class CheckOptions:
    """Engine flags the user intends to launch with (None: not given, use the engine default)."""

    num_speculative_tokens: Optional[int] = None
    tp: int = 1
    draft_tp: Optional[int] = None
    sglang_num_draft_tokens: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    deep: bool = True
    trust_remote_code: bool = False
    # --adapter FILE_OR_NAME: the deep inspection wraps the target in it, so module rules see the
    # adapted model (a shim file from `dflash-check adapt`, or a built-in adapter name).
    adapter: Optional[str] = None
    # Hub token for the deep checks' remote reads (safetensors headers); None: HF_TOKEN / saved login.
    token: Optional[str] = None


@dataclass
class CheckContext:
    """What a rule sees: both specs and the options. Helpers build locations from spec sources."""

    target: TargetSpec
    draft: DraftSpec
    options: CheckOptions = field(default_factory=CheckOptions)
    notes: list[str] = field(default_factory=list)

    def has(self, fact: str) -> bool:
        """Whether a deep fact was gathered: "modules" (target tree) or "weights" (draft headers)."""
        return facts_gathered(fact, self.target.layers_path, self.target.deep, self.draft.weights)

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
    # A rule that speaks for several engines with different verdicts names the ones this applies to
    # (empty: every backend the rule covers).
    backends: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineSource:
    """Where an engine decides what a rule says: a file and line range in that engine's release
    (`contract.ENGINE_VERSIONS` names the version), relative to the wheel's top package."""

    engine: str  # a key of contract.ENGINE_VERSIONS
    path: str  # e.g. "vllm/config/speculative.py"
    lines: str  # "1614" or "1614-1620"
    note: str = ""  # what these lines decide, in a few words

    def cite(self) -> str:
        from .contract import ENGINE_VERSIONS

        return f"{self.engine} {ENGINE_VERSIONS[self.engine]} {self.path}:{self.lines}"


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
    # Rules that need the deep (module / weights) inspection say so; they are skipped otherwise.
    needs: tuple[str, ...] = ()
    # The engine code this rule's verdict rests on (every rule that speaks for an engine has some).
    sources: tuple[EngineSource, ...] = ()

    def applies_to(self, backends: Sequence[str]) -> list[str]:
        if COMMON in self.backends:
            return [COMMON]
        return [b for b in self.backends if b in backends]


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
            from .exceptions import InputError

            raise InputError(f"{flag} {', '.join(unknown)} matches no rule code (codes look like DF101; "
                             "`dflash-check rules` lists them)")
    return [r for r in rules if (not sel or _matches(r.code, sel)) and not _matches(r.code, ign)]


def _sort_key(f: Finding) -> tuple:
    locs = tuple((loc.artifact, loc.file, loc.key) for loc in f.locations)
    return (_SEVERITY_ORDER[f.severity], f.code, f.backend, f.message, locs)


def run_rules(ctx: CheckContext, rules: Sequence[Rule], backends: Sequence[str]) -> list[Finding]:
    """Run every rule and return the findings sorted (deterministic output)."""
    findings: list[Finding] = []
    for rule in rules:
        if not all(ctx.has(fact) for fact in rule.needs):
            continue
        targets = rule.applies_to(backends)
        if not targets:
            continue
        for violation in rule.check(ctx):
            for backend in targets:
                if violation.backends and backend not in violation.backends:
                    continue
                findings.append(
                    Finding(
                        code=rule.code,
                        name=rule.name,
                        severity=violation.severity or rule.severity,
                        backend=backend,
                        message=violation.message,
                        fix=violation.fix or rule.fix,
                        locations=list(violation.locations),
                    )
                )
    return sorted(findings, key=_sort_key)
