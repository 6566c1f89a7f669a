"""`--format sarif`: SARIF 2.1.0, for code-scanning dashboards. Rule help comes from the rule docs."""

from __future__ import annotations

from urllib.parse import quote

from dflash_compat.checker.findings import RuleRun
from dflash_compat.checker.report import Report
from dflash_compat.emitters._paths import artifact_path
from dflash_compat.emitters._safe import dumps

__all__ = ["render"]

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule(rule: RuleRun, engines: dict) -> dict:
    """`engines`: the report's engines (name -> {"version": ...}): citations show that release's lines."""
    docs = rule.docs

    def cite(src) -> str:
        return src.cite(engines.get(src.engine, {}).get("version"))

    described = {}
    if docs is not None:
        help_text = f"{docs.what}\n\nWhy it matters: {docs.why}\n\nExample: {docs.example}\n\nHow to fix: {docs.fix}"
        if docs.sources:
            help_text += "\n\nEngine sources:" + "".join(f"\n- {cite(src)}: {src.note}" for src in docs.sources)
        described = {"shortDescription": {"text": docs.what}, "fullDescription": {"text": docs.why},
                     "help": {"text": help_text}}
    properties: dict = {"backends": list(rule.backends)}
    if docs is not None and docs.sources:
        properties["sources"] = [cite(src) for src in docs.sources]
    return {
        "id": rule.code,
        "name": rule.name,
        **described,
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def render(report: Report) -> str:
    used = sorted({f.code for f in report.findings})
    by_code = {r.code: r for r in report.rules}
    driver_rules = [_rule(by_code[c], report.engines) for c in used if c in by_code]
    index = {r["id"]: i for i, r in enumerate(driver_rules)}
    results = []
    for f in report.findings:
        locations = []
        for loc in f.locations:
            entry: dict = {"logicalLocations": [{"fullyQualifiedName": f"{loc.artifact}:{loc.key}", "kind": "member"}]}
            path = artifact_path(report, loc)
            if path is not None:
                # a URI reference: anything outside RFC 3986's characters is percent-encoded
                entry["physicalLocation"] = {"artifactLocation": {"uri": quote(path, safe="/", errors="replace")}}
            locations.append(entry)
        result = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {"text": f"[{f.backend}] {f.message}"},
            "locations": locations,
            "properties": {"backend": f.backend, "fix": f.fix},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    doc = {
        "$schema": _SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": report.tool.name,
                        "version": report.tool.version,
                        "rules": driver_rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return dumps(doc)
