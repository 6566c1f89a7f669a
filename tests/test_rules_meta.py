"""DF0xx: inputs the checker cannot fully judge (remote code, non-generative or incomplete configs)."""

from dflash_compat.deployment.options import CheckOptions
from tests.configs import DELETE, catches, draft, run_rule, target

REMOTE = {"AutoConfig": "configuration_foo.FooConfig", "AutoModelForCausalLM": "modeling_foo.FooForCausalLM"}


def test_df001_catches_auto_map():
    [f] = run_rule("DF001", target(auto_map=REMOTE), draft())
    assert "modeling_foo.FooForCausalLM" in f.message and "--trust-remote-code was not given" in f.message
    assert [loc.key for loc in f.locations] == ["auto_map"]


def test_df001_still_warns_with_trust_remote_code():
    [f] = run_rule("DF001", target(auto_map=REMOTE), draft(), options=CheckOptions(trust_remote_code=True))
    assert "not given" not in f.message


def test_df001_passes_builtin_class():
    assert not catches("DF001", target(), draft())


def test_df002_catches_base_model_class():
    assert catches("DF002", target(architectures=["Qwen3Model"]), draft())


def test_df002_catches_encoder_decoder_models():
    [f] = run_rule("DF002", target(architectures=["T5ForConditionalGeneration"], model_type="t5"), draft())
    assert "encoder-decoder" in f.message


def test_df002_passes_a_base_class_whose_auto_map_registers_a_causal_lm():
    chatglm = target(architectures=["ChatGLMModel"], model_type="chatglm",
                     auto_map={"AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration"})
    assert not catches("DF002", chatglm, draft())


def test_df002_passes_causal_lm_and_vlm_and_missing_architectures():
    assert not catches("DF002", target(), draft())
    assert not catches("DF002", target(architectures=["Qwen3VLForConditionalGeneration"]), draft())
    # transformers' causal-LM classes with irregular names (a tiny BertGenerationDecoder runs DFlash: zoo truth)
    assert not catches("DF002", target(architectures=["BertGenerationDecoder"], model_type="bert-generation"), draft())
    assert catches("DF002", target(architectures=["BertGenerationEncoder"], model_type="bert-generation"), draft())
    assert not catches("DF002", target(architectures=DELETE), draft())


def test_df003_catches_missing_sizes_and_names_them():
    [f] = run_rule("DF003", target(hidden_size=DELETE, vocab_size=DELETE), draft())
    assert "hidden_size" in f.message and "vocab_size" in f.message and "num_hidden_layers" not in f.message
    assert [loc.key for loc in f.locations] == ["hidden_size", "vocab_size"]


def test_df003_passes_complete_and_alias_keys():
    assert not catches("DF003", target(), draft())
    gpt2 = target(hidden_size=DELETE, n_embd=4096, num_hidden_layers=DELETE, n_layer=36)
    assert not catches("DF003", gpt2, draft())


def test_df004_catches_missing_draft_fields():
    [f] = run_rule("DF004", target(), draft(num_key_value_heads=DELETE, rms_norm_eps=DELETE))
    assert "num_key_value_heads" in f.message and "rms_norm_eps" in f.message


def test_df004_passes_complete_draft():
    assert not catches("DF004", target(), draft())
