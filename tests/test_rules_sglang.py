"""DF4xx: SGLang's DFLASH algorithm: flags, model-class support, hybrid targets, quantisation."""

from dflash_compat.engine import CheckOptions
from tests.configs import catches, draft, run_rule, target

S = ("sglang",)
QUANT_HEAD = {"quant_method": "compressed-tensors", "ignore": []}


def test_df401_catches_block_minus_one():
    [f] = run_rule("DF401", target(), draft(), options=CheckOptions(sglang_num_draft_tokens=15), backends=S)
    assert "counts the anchor" in f.message and f.backend == "sglang"


def test_df401_passes_equal_or_absent_flag():
    assert not catches("DF401", target(), draft(), options=CheckOptions(sglang_num_draft_tokens=16), backends=S)
    assert not catches("DF401", target(), draft(), backends=S)


def test_df402_errors_on_listed_unsupported_and_warns_on_unknown():
    [f] = run_rule("DF402", target(architectures=["Qwen2ForCausalLM"]), draft(), backends=S)
    assert f.severity == "error"
    [g] = run_rule("DF402", target(architectures=["FooForCausalLM"]), draft(), backends=S)
    assert g.severity == "warning"


def test_df402_passes_supported_class():
    assert not catches("DF402", target(), draft(), backends=S)


def test_df403_catches_hybrid_target():
    [f] = run_rule("DF403", target(model_type="qwen3_next"), draft(), backends=S)
    assert "extra_buffer" in f.message


def test_df403_passes_attention_target():
    assert not catches("DF403", target(), draft(), backends=S)


def test_df404_catches_v2_draft_with_quantised_head():
    v2 = draft(architectures=["DFlash2DraftModel"])
    assert catches("DF404", target(quantization_config=QUANT_HEAD), v2, backends=S)


def test_df404_passes_v1_draft_or_full_precision_head():
    v2 = draft(architectures=["DFlash2DraftModel"])
    assert not catches("DF404", target(quantization_config=QUANT_HEAD), draft(), backends=S)
    kept = dict(QUANT_HEAD, ignore=["lm_head"])
    assert not catches("DF404", target(quantization_config=kept), v2, backends=S)


def test_df405_catches_quantised_target():
    [f] = run_rule("DF405", target(quantization_config={"quant_method": "fp8"}), draft(), backends=S)
    assert "fp8" in f.message


def test_df405_passes_bf16_target():
    assert not catches("DF405", target(), draft(), backends=S)
