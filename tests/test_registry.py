"""The rule registry: every rule file is listed, codes are unique, every rule documents itself."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from dflash_compat.checker import BACKENDS, COMMON, SEVERITIES
from dflash_compat.rules import ALL_RULES, RULES_BY_CODE

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def _rule_files() -> list[Path]:
    """Every rule file: one folder per family (rules/<family>/dfNNN_*.py)."""
    return sorted(RULES_DIR.glob("*/df*.py"))


def test_rules_sit_in_family_folders_only():
    assert not list(RULES_DIR.glob("df*.py")), "a rule file at the top of rules/: put it in its family's folder"
    assert len(_rule_files()) > 100


def test_every_rule_file_is_registered():
    files = _rule_files()
    registered = set()
    for path in files:
        stem = f"{path.parent.name}.{path.stem}"
        module = importlib.import_module(f"dflash_compat.rules.{stem}")
        assert hasattr(module, "RULE"), f"{stem} defines no RULE"
        registered.add(module.RULE.code)
        assert module.RULE in ALL_RULES, f"{stem} is not listed in rules/__init__.py"
    assert len(files) == len(ALL_RULES), "one file per rule, one rule per file"


def test_file_is_named_after_its_rule():
    for path in _rule_files():
        rule = importlib.import_module(f"dflash_compat.rules.{path.parent.name}.{path.stem}").RULE
        assert path.stem == f"{rule.code.lower()}_{rule.name.replace('-', '_')}", path


def test_codes_unique_and_in_order():
    codes = [r.code for r in ALL_RULES]
    assert len(codes) == len(set(codes)) == len(RULES_BY_CODE)
    assert codes == sorted(codes), "ALL_RULES is listed in code order"
    names = [r.name for r in ALL_RULES]
    assert len(names) == len(set(names))


def test_every_rule_is_documented():
    for r in ALL_RULES:
        assert re.fullmatch(r"DF\d{3}", r.code), r.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", r.name), r.name
        assert r.severity in SEVERITIES
        assert r.backends and all(b in (COMMON, *BACKENDS) for b in r.backends)
        for field in ("what", "why", "example", "fix"):
            text = getattr(r, field)
            assert isinstance(text, str) and len(text.strip()) >= 10, f"{r.code}.{field}"
        assert callable(r.check)


def test_a_violation_can_speak_for_some_of_its_rules_engines():
    from dflash_compat.checker import Rule, RuleContext, Violation, run_rules
    from dflash_compat.specs import parse_draft_config, parse_target_config
    from tests.configs import draft, target

    def check(ctx):
        yield Violation("fails here", backends=("vllm",))
        yield Violation("guesses there", severity="info", backends=("sglang", "mlx"))
        yield Violation("everywhere")

    rule = Rule(code="DF999", name="per-engine-example", severity="error", backends=("vllm", "sglang", "mlx"),
                check=check, what="-" * 10, why="-" * 10, example="-" * 10, fix="-" * 10)
    ctx = RuleContext(target=parse_target_config(target(), "t"), draft=parse_draft_config(draft(), "d"))
    found = {(f.backend, f.message, f.severity) for f in run_rules(ctx, [rule], ("vllm", "sglang"))}
    assert found == {("vllm", "fails here", "error"), ("sglang", "guesses there", "info"),
                     ("vllm", "everywhere", "error"), ("sglang", "everywhere", "error")}
    # the per-backend counts follow the filtered findings; a common rule's finding is for every engine
    from dflash_compat.checker import COMMON, check_rules

    counts = check_rules(ctx, [rule], ("vllm", "sglang")).counts
    assert (counts["vllm"].errors, counts["vllm"].infos, counts["sglang"].errors, counts["sglang"].infos) == (2, 0, 1, 1)
    common = Rule(code="DF998", name="common-example", severity="warning", backends=(COMMON,), check=check,
                  what="-" * 10, why="-" * 10, example="-" * 10, fix="-" * 10)
    assert {f.backend for f in run_rules(ctx, [common], ("vllm", "sglang"))} == {COMMON}
    assert len(run_rules(ctx, [common], ("vllm", "sglang"))) == 3
