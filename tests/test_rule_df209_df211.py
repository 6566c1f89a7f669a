"""DF209 (hyper-connection streams: HY-V4 and DeepSeek-V4 crash both reference runtimes) and DF211 (a sparse-
attention top-k: output differs past index_topk tokens), both found by the zoo truth benchmark."""

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


def test_df211_notes_a_sparse_attention_target_and_passes_dense_ones():
    dsa = target(model_type="deepseek_v32", architectures=["DeepseekV32ForCausalLM"], index_topk=2048)
    [f] = run_rule("DF211", dsa, draft(), backends=("dflash",))
    assert f.severity == "warning" and "top 2048 keys" in f.message and "longer than 2048 tokens" in f.message
    assert not catches("DF211", target(), draft())
    assert not run_rule("DF211", dsa, draft(), backends=("vllm",))
