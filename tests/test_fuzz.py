"""Fuzzing as a test (issue 12): hostile configs, safetensors headers and command lines never break the contract.

Every case runs `dflash-check` (in this process, through the console script's own error handling;
a few as real processes) and must exit 0/1 with a report (strict JSON for --format json) or 2 with
one line on stderr: no traceback, no hang, input files byte-identical. The budget is fixed and the
cases derandomized, so CI runs the same few hundred cases every time; benchmarks/fuzz_long.py runs
the same strategies for 10,000+ cases (docs/fuzzing.md). FUZZ_SCALE=10 runs ten times as many here.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.cases import TINY, Case, Op
from tests.fuzz.options import check_option_cases, smoke_option_cases
from tests.fuzz.runner import Outcome, run_case, violation, warm_up
from tests.fuzz.strategies import config_cases, deep_config_cases, header_cases

SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))
# derandomize: the same cases on every run (CI is reproducible); no deadline: a slow case on a busy
# machine is not a bug, a hang is caught by the runner's own timer (LIMIT_S) and fails the case.
CI = settings(derandomize=True, database=None, deadline=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LIMIT_S = 30.0


def _examples(n: int) -> settings:
    return settings(CI, max_examples=n * SCALE)


def _explain(out: Outcome) -> str:
    return (f"\n{out.case!r}\ndflash-check {' '.join(out.case.argv())}\nexit {out.code} in {out.seconds:.1f} s"
            f"\nstdout: {out.stdout[-1500:]}\nstderr: {out.stderr[-1500:]}\nerror: {out.error!r} at {out.where}")


def assert_contract(case: Case, subprocess: bool = False) -> Outcome:
    out = run_case(case, LIMIT_S, subprocess=subprocess)
    problem = violation(out)
    assert problem is None, problem + _explain(out)
    return out


@pytest.fixture(scope="module", autouse=True)
def _frameworks_warm():
    """One unjudged deep check per framework first: the first case must not spend its time limit importing."""
    warm_up()


@_examples(60)
@given(config_cases())
def test_mutated_real_configs(case):
    assert_contract(case)


@_examples(20)
@given(deep_config_cases())
def test_mutated_configs_through_the_deep_check(case):
    assert_contract(case)


@_examples(60)
@given(header_cases())
def test_hostile_safetensors_headers(case):
    assert_contract(case)


@_examples(80)
@given(check_option_cases())
def test_hostile_check_command_lines(case):
    assert_contract(case)


@_examples(40)
@given(smoke_option_cases())
def test_hostile_smoke_options_fail_before_loading(case):
    out = assert_contract(case)
    assert out.code == 2  # the target folder does not exist: nothing is ever loaded


# The in-process runner must judge as a real process would: a few cases both ways, same exit code and stderr.
_REAL_PROCESS = [
    Case("qwen3-8b", draft_ops=(Op("raw", (), b"[" * 100_000 + b"]" * 100_000),), args=("--no-deep",)),
    Case("qwen3-8b", target_ops=(Op("set", ("num_hidden_layers",), "36"),), args=("--no-deep", "--format", "json")),
    Case("llama-3.1-8b", args=("--no-deep", "--num-speculative-tokens", "2" * 30, "--severity", "DF1=fatal")),
    Case(TINY, args=("--no-deep", "--format", "sarif", "--select", "DF1\x1b[31m")),
]


@pytest.mark.parametrize("case", _REAL_PROCESS, ids=range(len(_REAL_PROCESS)))
def test_in_process_runs_agree_with_a_real_process(case):
    real = assert_contract(case, subprocess=True)
    here = run_case(case, LIMIT_S)
    assert (here.code, here.stderr.strip()) == (real.code, real.stderr.strip()), _explain(here) + _explain(real)


def test_the_judge_catches_each_kind_of_violation():
    """The contract check itself can fail: a traceback, two error lines, a changed input, non-strict JSON."""
    case = Case("qwen3-8b", args=("--format", "json"))
    ok = Outcome(case, 1, '{"a": 1}', "", None, "", 0.1, [])
    assert violation(ok) is None
    assert violation(Outcome(case, None, "", "", KeyError("x"), "rules/x.py:3 (f)", 0.1, [])).startswith("traceback")
    assert violation(Outcome(case, 2, "", "dflash-check: error: a\nmore\n", None, "", 0.1, []))
    assert violation(Outcome(case, 1, '{"a": 1}', "", None, "", 0.1, ["draft/config.json"])).startswith("input")
    assert "strict JSON" in violation(Outcome(case, 1, '{"a": NaN}', "", None, "", 0.1, []))
    assert violation(Outcome(case, 0, "", "", None, "", 0.1, [])) == "exit 0 without a report"
