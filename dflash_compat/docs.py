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


START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def update_readme(path: str = "README.md") -> bool:
    """Rewrite the rule table between the markers in README.md; True when it changed."""
    from .rules import ALL_RULES

    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    new = f"{head}{START}\n{rules_markdown(ALL_RULES)}{END}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":  # python -m dflash_compat.docs  (run from the repo root)
    print("README.md updated" if update_readme() else "README.md already current")
