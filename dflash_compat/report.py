"""The check report: plain data shared by every output format (text, JSON, SARIF, JUnit)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import __version__

__all__ = ["Location", "Finding", "Summary", "Report", "SCHEMA_VERSION", "verdicts"]

SCHEMA_VERSION = 1
Severity = Literal["error", "warning", "info"]
Verdict = Literal["pass", "warn", "fail"]


class Location(BaseModel):
    """Where a finding points: a config key, a module path or a tensor name in one artifact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    artifact: Literal["target", "draft"]
    file: str = Field(description="config.json, a safetensors file, or <module tree>.")
    key: str = Field(description="Dotted config key as written in the file, module path or tensor name.")


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    name: str
    severity: Severity
    backend: str
    message: str
    fix: str
    locations: list[Location] = Field(default_factory=list)


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    errors: int = 0
    warnings: int = 0
    infos: int = 0
    verdict: dict[str, Verdict] = Field(default_factory=dict)


class Tool(BaseModel):
    name: str = "dflash-check"
    version: str = __version__


class Report(BaseModel):
    """`dflash-check --format json` writes exactly this object."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    tool: Tool = Field(default_factory=Tool)
    target: dict[str, Any]
    draft: dict[str, Any]
    backends: list[str]
    findings: list[Finding]
    summary: Summary

    def exit_code(self, strict: bool = False) -> int:
        bad = ("fail", "warn") if strict else ("fail",)
        return 1 if any(v in bad for v in self.summary.verdict.values()) else 0


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
