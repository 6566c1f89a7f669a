from tests.configs import catches, draft, target


def test_catches_different_hidden_size():
    assert catches("DF101", target(), draft(hidden_size=2560))


def test_catches_vlm_text_config_mismatch():
    vlm = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
           "text_config": {"hidden_size": 2048, "num_hidden_layers": 36, "vocab_size": 151936}}
    assert catches("DF101", vlm, draft())


def test_passes_matching_hidden_size():
    assert not catches("DF101", target(), draft())
