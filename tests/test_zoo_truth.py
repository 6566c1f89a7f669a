"""The zoo truth benchmark's CI sample: the checker's verdict per backend agrees with what the runtimes do.

Tiny random targets of a few model types (attention-only layouts and recurrent hybrids), run through
transformers' own generate(speculation_type="dflash") with a Muse-Glimmer assistant, the dflash reference with a
z-lab draft, and our smoke; each outcome is compared with the checker's verdict for that backend
(benchmarks/bench_zoo_truth.py, results for the whole zoo in docs/zoo-truth.md). The full sample is slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("dflash")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_zoo_truth as bench  # noqa: E402
import zoo_models  # noqa: E402

FAST = ("qwen3", "ctrl", "qwen3_next", "falcon_h1")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("zoo")


@pytest.mark.parametrize("model_type", FAST)
def test_checker_agrees_with_the_runtimes(cache, model_type):
    row = bench.case(model_type, ["transformers", "dflash"], cache)
    assert row["built"], row
    for backend in ("transformers", "dflash"):
        result = row[backend]
        assert bench.agrees(result), (model_type, backend, result)


def test_smoke_agrees_with_the_dflash_verdict(cache):
    # smoke mirrors the reference: it runs a pair the check passes, refuses a hybrid with the check's DF201
    for model_type, outcome in (("qwen3", "lossless"), ("qwen3_next", "refused")):
        row = bench.case(model_type, ["smoke"], cache)
        assert row["smoke"]["outcome"] == outcome and bench.agrees(row["smoke"]), row
    assert "DF201" in row["smoke"]["detail"]


def test_native_rollback_of_a_hybrid_follows_the_installed_transformers(cache):
    # 5.24.0 refuses a stateful target in assisted generation; 5.25.0 rolls Qwen3-Next back, partial
    # acceptance included (the benchmark rewrites draft blocks to be accepted 0..block tokens)
    import transformers

    row = bench.case("qwen3_next", ["transformers"], cache)
    native = tuple(int(p) for p in transformers.__version__.split(".")[:2]) >= (5, 25)
    assert row["transformers"]["outcome"] == ("lossless" if native else "refused"), row
    assert row["transformers"]["verdict"] == ("pass" if native else "fail")


def test_the_table_counts_agreement_and_lists_disagreements():
    rows = {"a": {"built": True, "dflash": {"outcome": "lossless", "verdict": "pass"}},
            "b": {"built": True, "dflash": {"outcome": "crashed", "detail": "KeyError: x", "verdict": "pass",
                                             "why": ""}},
            "c": {"built": False, "error": "ValueError"}}
    text = bench.table(rows, ["dflash"], "9.9.9")
    assert "| dflash | 2 | 1 (50%) | 1 | 0 | 1 | 0 | 1 |" in text
    assert "| b | dflash | crashed (KeyError: x) | pass" in text and "Not built at a tiny size (1): `c`" in text


@pytest.mark.slow
def test_the_whole_sample_agrees(cache):
    rows = {t: bench.case(t, list(bench.BACKENDS), cache) for t in zoo_models.SAMPLE}
    bad = [(t, b, r[b]) for t, r in rows.items() if r.get("built") for b in bench.BACKENDS
           if isinstance(r.get(b), dict) and bench.agrees(r[b]) is False]
    assert not bad, bad


def test_a_looped_target_runs_in_smoke_as_in_the_reference(cache):
    # HRM applies its 4-layer stacks in loops; num_hidden_layers counts applications and the draft's ids index
    # output_hidden_states by application (the reference's way). DF705 warns, smoke runs it from
    # output_hidden_states (a hook would fire once per application), both losslessly.
    import transformers.models as models

    if not hasattr(models, "hrm_text"):
        pytest.skip("this transformers has no hrm_text")
    row = bench.case("hrm_text", ["dflash", "smoke"], cache)
    assert row["built"], row
    assert row["dflash"]["outcome"] == row["smoke"]["outcome"] == "lossless", row
    assert row["dflash"]["verdict"] == "pass" and bench.agrees(row["smoke"]), row
