"""The rule registry: every rule file is listed, codes are unique, every rule documents itself."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from dflash_compat.engine import BACKENDS, COMMON, SEVERITIES
from dflash_compat.rules import ALL_RULES, RULES_BY_CODE

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def test_every_rule_file_is_registered():
    files = sorted(p.stem for p in RULES_DIR.glob("df*.py"))
    registered = set()
    for stem in files:
        module = importlib.import_module(f"dflash_compat.rules.{stem}")
        assert hasattr(module, "RULE"), f"{stem} defines no RULE"
        registered.add(module.RULE.code)
        assert module.RULE in ALL_RULES, f"{stem} is not listed in rules/__init__.py"
    assert len(files) == len(ALL_RULES), "one file per rule, one rule per file"


def test_file_is_named_after_its_rule():
    for stem in (p.stem for p in RULES_DIR.glob("df*.py")):
        rule = importlib.import_module(f"dflash_compat.rules.{stem}").RULE
        assert stem == f"{rule.code.lower()}_{rule.name.replace('-', '_')}", stem


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


def test_retired_codes_stay_unused():
    from dflash_compat.rules import RETIRED

    assert RETIRED and not set(RETIRED) & set(RULES_BY_CODE), "a retired code is never given to another rule"
    for code, why in RETIRED.items():
        assert re.fullmatch(r"DF\d{3}", code) and why.split(":")[0] and len(why) > 40, code
