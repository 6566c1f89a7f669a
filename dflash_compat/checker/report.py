"""The check report: plain data shared by every output format (text, JSON, SARIF, JUnit, GitHub).

Stdlib dataclasses, not pydantic models: the report is only ever built by us, and a config-only
check must start fast. `dflash-check schema` derives the JSON Schema with pydantic's TypeAdapter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

from dflash_compat import __version__
from dflash_compat.checker.findings import BackendCounts, Finding, Location, RuleResults, RuleRun

if TYPE_CHECKING:  # only for annotations: building a report needs no pydantic import here
    from dflash_compat.engines.registry import Versions
    from dflash_compat.modelfacts import DraftWeights, ModuleFacts, Skipped
    from dflash_compat.specs import DraftSpec, TargetSpec

__all__ = [
    "Finding",
    "Location",
    "Report",
    "RuleRun",
    "SCHEMA_VERSION",
    "Summary",
    "build_report",
    "engines_text",
    "judged_engines",
    "json_schema",
    "summarize",
]

SCHEMA_VERSION = 1
Verdict = Literal["pass", "warn", "fail"]


@dataclass
class Summary:
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    verdict: dict[str, Verdict] = field(default_factory=dict)
    # per selected backend: its findings (its own and the common ones) and its rules that ran / were skipped
    per_backend: dict[str, BackendCounts] = field(default_factory=dict)


@dataclass
class Tool:
    name: str = "dflash-check"
    version: str = __version__


@dataclass
class Report:
    """`dflash-check --format json` writes exactly this object (`to_dict`)."""

    target: dict[str, Any]
    draft: dict[str, Any]
    backends: list[str]
    findings: list[Finding]
    summary: Summary
    schema_version: int = SCHEMA_VERSION
    tool: Tool = field(default_factory=Tool)
    strict: bool = False  # --strict: a warning fails its backend too
    rules: list[RuleRun] = field(default_factory=list)  # what happened to each selected rule
    # The engine releases the verdicts were judged against, per engine whose code speaks for a selected
    # backend: {"vllm": {"version": "0.34.0", "requested": "0.34.1", "origin": "option", "status": "newer"}}
    # (version: the facts release used; origin: option, launch-file, config, installed or default).
    engines: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, keys in the documented order (schema version 1; `strict`, `rules`,
        `summary.per_backend` and `engines` were added later)."""
        d = _plain(self)
        for run in d["rules"]:
            del run["docs"]  # the rules' documentation is `dflash-check rules --format json`
        order = ("schema_version", "tool", "engines", "target", "draft", "backends", "findings", "summary", "strict",
                 "rules")
        return {k: d[k] for k in order}

    def exit_code(self, strict: Optional[bool] = None) -> int:
        """1 when a selected backend fails (`strict` defaults to the report's own setting)."""
        strict = self.strict if strict is None else strict
        bad = ("fail", "warn") if strict else ("fail",)
        return 1 if any(v in bad for v in self.summary.verdict.values()) else 0


_SCALARS = (str, int, float, bool, type(None))
# dataclass type -> its field names (None: not a dataclass); `dataclasses.fields` per object cost a
# fifth of the JSON report's rendering time
_FIELD_NAMES: dict[type, Optional[tuple[str, ...]]] = {}


def _field_names(cls: type) -> Optional[tuple[str, ...]]:
    if cls not in _FIELD_NAMES:
        _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None
    return _FIELD_NAMES[cls]


def _plain(value: Any) -> Any:
    """`dataclasses.asdict` without its deep copy of every leaf (a report's leaves are immutable scalars;
    the containers are new), tuples as lists, and a rule's docs left unconverted (`to_dict` drops them):
    a quarter of a config-only check's run time went to asdict."""
    if type(value) in _SCALARS:
        return value
    names = _field_names(type(value))
    if names is not None:
        if isinstance(value, RuleRun):
            return {n: value.docs if n == "docs" else _plain(getattr(value, n)) for n in names}
        return {n: _plain(getattr(value, n)) for n in names}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def engines_text(engines: dict[str, dict[str, str]]) -> str:
    """The report's `engines` as one line: `vllm 0.34.0 (option), transformers 5.25.0 (installed)`, with the
    release asked for where its facts came from another (`vllm 0.34.0 (option, asked 0.34.1)`)."""
    return ", ".join(f"{n} {e['version']}" + (f" ({e['origin']}, asked {e['requested']})"
                                               if e["requested"] != e["version"] else f" ({e['origin']})")
                     for n, e in engines.items())


def judged_engines(runs: list[RuleRun], backends: list[str], versions: "Optional[Versions]" = None
                   ) -> dict[str, dict[str, str]]:
    """The engines (name -> version, requested, origin, status) that speak for the selected backends, in
    registry order."""
    from dflash_compat.engines.registry import ENGINES, default_versions

    versions = versions if versions is not None else default_versions()
    speaking = [name for name, info in ENGINES.items() if set(info.backends) & set(backends)]
    return versions.as_json(speaking)


def _verdict(counts: BackendCounts) -> Verdict:
    """Fail on any error (the backend's own or common), warn on any warning, else pass."""
    return "fail" if counts.errors else ("warn" if counts.warnings else "pass")


def summarize(findings: list[Finding], per_backend: dict[str, BackendCounts]) -> Summary:
    return Summary(
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
        infos=sum(f.severity == "info" for f in findings),
        verdict={b: _verdict(c) for b, c in per_backend.items()},
        per_backend=dict(per_backend),
    )


def build_report(
    target: "TargetSpec",
    draft: "DraftSpec",
    modules: "Optional[Union[ModuleFacts, Skipped]]",
    weights: "Optional[Union[DraftWeights, Skipped]]",
    results: RuleResults,
    strict: bool = False,
    versions: "Optional[Versions]" = None,
) -> Report:
    """The report of one check: the specs and deep facts as plain dicts, and the engine's `RuleResults`."""
    from dflash_compat.modelfacts.report_fields import module_fields, weights_field

    gguf_t = {"gguf": target.gguf.summary()} if getattr(target, "gguf", None) is not None else {}
    gguf_d = {"gguf": draft.gguf.summary()} if getattr(draft, "gguf", None) is not None else {}
    return Report(
        target={**target.model_dump(mode="json", exclude={"sources"}), **module_fields(modules), **gguf_t},
        draft={**draft.model_dump(mode="json", exclude={"sources"}), "weights": weights_field(weights), **gguf_d},
        backends=list(results.counts),
        findings=list(results.findings),
        summary=summarize(results.findings, results.counts),
        strict=strict,
        rules=list(results.rules),
        engines=judged_engines(results.rules, list(results.counts), versions),
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema of what `to_dict` writes."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(Report).json_schema()
    schema.get("$defs", {}).get("RuleRun", {}).get("properties", {}).pop("docs", None)
    return schema
