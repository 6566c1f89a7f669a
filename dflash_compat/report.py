"""The check report: plain data shared by every output format (text, JSON, SARIF, JUnit).

Stdlib dataclasses, not pydantic models: the report is only ever built by us, and a config-only
check must start fast. `dflash-check schema` derives the JSON Schema with pydantic's TypeAdapter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from . import __version__

__all__ = ["Location", "Finding", "Summary", "Report", "SCHEMA_VERSION", "facts_gathered", "verdicts"]

SCHEMA_VERSION = 1
Severity = Literal["error", "warning", "info"]
Verdict = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Location:
    """Where a finding points: a config key (dotted, as written in the file), a module path or a
    tensor name, in one artifact. `file` is config.json, a safetensors file, or <module tree>."""

    artifact: Literal["target", "draft"]
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


@dataclass
class Summary:
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    verdict: dict[str, Verdict] = field(default_factory=dict)


@dataclass
class Tool:
    name: str = "dflash-check"
    version: str = __version__


@dataclass
class Report:
    """`dflash-check --format json` writes exactly this object."""

    target: dict[str, Any]
    draft: dict[str, Any]
    backends: list[str]
    findings: list[Finding]
    summary: Summary
    schema_version: int = SCHEMA_VERSION
    tool: Tool = field(default_factory=Tool)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, keys in the documented order."""
        d = dataclasses.asdict(self)
        order = ("schema_version", "tool", "target", "draft", "backends", "findings", "summary")
        return {k: d[k] for k in order}

    def gathered(self, fact: str) -> bool:
        """Whether a deep fact was gathered, read from the report (the same test as CheckContext.has)."""
        if fact == "modules":
            return facts_gathered("modules", self.target.get("layers_path"), self.target.get("deep") or {})
        if fact == "weights":
            return facts_gathered("weights", weights=self.draft.get("weights"))
        return False

    def exit_code(self, strict: bool = False) -> int:
        bad = ("fail", "warn") if strict else ("fail",)
        return 1 if any(v in bad for v in self.summary.verdict.values()) else 0


def facts_gathered(fact: str, layers_path: Any = None, deep: Any = None, weights: Any = None) -> bool:
    """"modules": the target's tree was inspected; "weights": the draft's headers were read. One test for
    the rule engine (on specs) and the emitters (on the report's plain dicts)."""
    if fact == "modules":
        return layers_path is not None or bool((deep or {}).get("inspected"))
    if fact == "weights":
        checked = weights.get("checked") if isinstance(weights, dict) else getattr(weights, "checked", False)
        return bool(checked)
    return False


def verdicts(findings: list[Finding], backends: list[str]) -> dict[str, Verdict]:
    """Per backend: fail on any error (its own or common), warn on any warning, else pass."""
    out: dict[str, Verdict] = {}
    for backend in backends:
        mine = [f for f in findings if f.backend in (backend, "common")]
        if any(f.severity == "error" for f in mine):
            out[backend] = "fail"
        elif any(f.severity == "warning" for f in mine):
            out[backend] = "warn"
        else:
            out[backend] = "pass"
    return out


def summarize(findings: list[Finding], backends: list[str]) -> Summary:
    return Summary(
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
        infos=sum(f.severity == "info" for f in findings),
        verdict=verdicts(findings, backends),
    )
