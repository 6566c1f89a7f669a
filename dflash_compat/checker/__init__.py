"""The rule engine: rules (`rule`), the one context every rule reads (`context`), the one runner
(`runner`), findings and the report.

What a rule file imports comes from here: `Rule`, `Violation`, `RuleContext`, `EngineSource`, `COMMON`,
and `located` (a citation of an engine fact that names its own lines, such as a llama.cpp build's)."""

from dflash_compat.checker.context import FileLocation, RuleContext
from dflash_compat.checker.findings import COMMON, Location
from dflash_compat.checker.rule import BACKENDS, FACTS, SEVERITIES, Rule, Violation, select_rules, severity_override
from dflash_compat.checker.runner import check_rules, judged_for, run_rules
from dflash_compat.engines.store import EngineSource, located

__all__ = [
    "BACKENDS",
    "COMMON",
    "FACTS",
    "SEVERITIES",
    "EngineSource",
    "FileLocation",
    "Location",
    "Rule",
    "RuleContext",
    "Violation",
    "check_rules",
    "judged_for",
    "located",
    "run_rules",
    "select_rules",
    "severity_override",
]
