"""What the rule engine hands on: findings, one record per selected rule, and per-backend counts.

Plain stdlib dataclasses at the rule layer, so that rules and the engine never import the report;
the report (and through it every output format) is built from these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Sequence

from dflash_compat.engines.store import EngineSource

__all__ = [
    "COMMON",
    "BackendCounts",
    "Finding",
    "Location",
    "RuleDocs",
    "RuleResults",
    "RuleRun",
    "Severity",
    "backend_counts",
]

COMMON = "common"  # a finding or rule that applies to every backend
Severity = Literal["error", "warning", "info"]
RuleStatus = Literal["ran", "skipped", "not-applicable"]


@dataclass(frozen=True)
class Location:
    """Where a finding points: a config key (dotted, as written in the file), a module path or a
    tensor name, in one artifact. `file` is config.json, a safetensors file, or <module tree>."""

    artifact: Literal["target", "draft", "launch"]
    file: str
    key: str


@dataclass
class Finding:
    code: str
    name: str
    severity: Severity
    backend: str
    message: str
    fix: str
    locations: list[Location] = field(default_factory=list)
    # The engine releases this finding was judged for (name -> release), e.g. {"vllm": "0.34.0"}.
    judged_for: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleDocs:
    """A rule's documentation sections (SARIF's rule help is made of them)."""

    what: str
    why: str
    example: str
    fix: str
    # The engine code the rule rests on (engine, release, file:line): `rule DFxxx` and SARIF show it.
    sources: tuple[EngineSource, ...] = ()
    # The engine releases the rule holds for ("vllm<0.34.0"); empty: every release.
    versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleRun:
    """What happened to one selected rule: it ran, it was skipped because a fact it needs was not
    gathered (`missing` says which, `reason` why), or none of the selected backends is one it speaks for."""

    code: str
    name: str
    severity: Severity
    backends: tuple[str, ...]
    status: RuleStatus
    missing: Optional[str] = None  # skipped: the fact it needs that was not gathered (a key of engine.FACTS)
    reason: Optional[str] = None  # skipped / not-applicable: why, in words
    # The rule's documentation travels with the report so that formats describe rules without the registry;
    # it is not written into the JSON report (`Report.to_dict`).
    docs: Optional[RuleDocs] = field(default=None, compare=False, repr=False)

    def applies_to(self, backend: str) -> bool:
        return COMMON in self.backends or backend in self.backends


@dataclass(frozen=True)
class BackendCounts:
    """Per selected backend: its findings (its own and the common ones) and the rules that apply to it."""

    errors: int = 0
    warnings: int = 0
    infos: int = 0
    rules_ran: int = 0
    rules_skipped: int = 0


@dataclass(frozen=True)
class RuleResults:
    """What the engine returns for one check: the findings (sorted), one RuleRun per selected rule (in
    rule order), and the counts of each selected backend (in the order the backends were selected)."""

    findings: list[Finding]
    rules: list[RuleRun]
    counts: dict[str, BackendCounts]


def backend_counts(findings: Sequence[Finding], runs: Sequence[RuleRun], backend: str) -> BackendCounts:
    """One backend's counts: the findings that concern it (its own and the common ones), and the
    rules that apply to it by what happened to them."""
    mine = [f for f in findings if f.backend in (backend, COMMON)]
    applicable = [r for r in runs if r.applies_to(backend)]
    return BackendCounts(
        errors=sum(f.severity == "error" for f in mine),
        warnings=sum(f.severity == "warning" for f in mine),
        infos=sum(f.severity == "info" for f in mine),
        rules_ran=sum(r.status == "ran" for r in applicable),
        rules_skipped=sum(r.status == "skipped" for r in applicable),
    )
