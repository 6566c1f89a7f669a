"""Crashes the fuzzer found (tests/test_fuzz.py, benchmarks/fuzz_long.py), each pinned where it was fixed.

docs/fuzzing.md lists them with the long run that found them.
"""

from __future__ import annotations

import pytest

from dflash_compat.exceptions import ConfigError
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.configs import QWEN3_8B, QWEN3_8B_DRAFT, speculators_draft
from tests.fuzz.cases import Case, Op
from tests.fuzz.runner import run_case, violation

NOT_A_STRING = [[], {}, 5, ["dflash"], {"dflash": 1}]


@pytest.mark.parametrize("value", NOT_A_STRING, ids=repr)
def test_a_draft_whose_speculators_model_type_is_no_string_is_one_config_error(value):
    # was: TypeError (unhashable list) in specs/families.py detect_format, a registry lookup by this key
    with pytest.raises(ConfigError, match=r"draft d: config.json: `speculators_model_type` should be a string"):
        parse_draft_config(speculators_draft(speculators_model_type=value), "d")


@pytest.mark.parametrize("value", [[], {}, 0], ids=repr)
def test_a_target_whose_speculators_model_type_is_no_string_is_one_config_error(value):
    # a falsy value got past the "this is a draft" test to the same lookup
    with pytest.raises(ConfigError, match=r"target t: config.json: `speculators_model_type` should be a string"):
        parse_target_config({**QWEN3_8B, "speculators_model_type": value}, "t")


def test_a_string_speculators_model_type_still_names_the_family():
    assert parse_draft_config(speculators_draft(speculators_model_type="dflash"), "d").format == "speculators"
    assert parse_draft_config(dict(QWEN3_8B_DRAFT), "d").format == "zlab-v1"


@pytest.mark.parametrize("side", ["target_ops", "draft_ops"])
def test_end_to_end_the_reproducer_is_exit_2_with_one_line(side):
    case = Case("qwen3-vl-8b", **{side: (Op("set", ("speculators_model_type",), []),)}, args=("--no-deep",))
    out = run_case(case)
    assert violation(out) is None and out.code == 2, (out.stderr, out.error)
    assert "speculators_model_type" in out.stderr
