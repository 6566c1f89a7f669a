"""Rule documentation, generated from the rules themselves (README table, `rules --format json`)."""

from __future__ import annotations

import json
from typing import Sequence

from .engine import Rule

__all__ = ["rule_doc", "rules_json", "rules_markdown"]


def rule_doc(rule: Rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "backends": list(rule.backends),
        "needs": list(rule.needs),
        "what": rule.what,
        "why": rule.why,
        "example": rule.example,
        "fix": rule.fix,
    }


def rules_json(rules: Sequence[Rule]) -> str:
    return json.dumps([rule_doc(r) for r in rules], indent=2)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rules_markdown(rules: Sequence[Rule]) -> str:
    lines = [
        "| code | name | severity | backends | what it checks |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        deep = " (deep)" if r.needs else ""
        lines.append(
            f"| {r.code} | `{r.name}` | {r.severity} | {', '.join(r.backends)}{deep} | {_cell(r.what)} |"
        )
    return "\n".join(lines) + "\n"
