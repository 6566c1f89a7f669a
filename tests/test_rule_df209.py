"""DF209: a target with hyper-connections (several residual streams per token) cannot condition a DFlash draft
on the reference runtimes; found by the zoo truth benchmark (HY-V4, DeepSeek-V4 crash both runtimes)."""

from __future__ import annotations

from tests.configs import catches, draft, run_rule, target


def _hy_v4(**changes):
    return target(model_type="hy_v4", architectures=["HYV4ForCausalLM"], hc_mult=4, **changes)


def test_df209_catches_hyper_connection_streams_for_both_reference_runtimes():
    assert run_rule("DF209", _hy_v4(), draft(), backends=("transformers",))
    [f] = run_rule("DF209", _hy_v4(), draft(), backends=("dflash",))
    assert "4 residual streams" in f.message and "[batch, seq, 4, hidden]" in f.message
    assert "dflash/model.py" in f.message and f.locations[0].key == "hc_mult"


def test_df209_passes_one_stream_and_leaves_the_serving_engines_alone():
    assert not catches("DF209", target(), draft())
    assert not catches("DF209", target(hc_mult=1), draft())
    assert not run_rule("DF209", _hy_v4(), draft(), backends=("vllm", "sglang"))
