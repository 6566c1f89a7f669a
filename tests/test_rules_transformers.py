"""DF2xx: the transformers (reference PyTorch) runtime's cache rollback."""

from tests.configs import DELETE, catches, draft, run_rule, target

NEXT_TYPES = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 9


def test_df201_catches_hybrid_layer_types():
    [f] = run_rule("DF201", target(model_type="qwen3_next", layer_types=NEXT_TYPES), draft())
    assert "27 of its 36 layers" in f.message
    assert f.backend == "transformers"
    assert [loc.key for loc in f.locations] == ["layer_types", "model_type"]


def test_df201_catches_recurrent_model_type_without_layer_list():
    assert catches("DF201", target(model_type="falcon_h1"), draft())


def test_df201_passes_attention_only_target():
    assert not catches("DF201", target(), draft())


def test_df201_only_speaks_for_transformers():
    assert not catches("DF201", target(model_type="falcon_h1"), draft(), backends=("vllm",))


def test_df202_catches_sliding_window_layers():
    gpt_oss = target(model_type="gpt_oss", sliding_window=128, use_sliding_window=DELETE,
                     layer_types=["sliding_attention", "full_attention"] * 18)
    [f] = run_rule("DF202", gpt_oss, draft())
    assert "128 tokens" in f.message and f.locations[0].key == "sliding_window"


def test_df202_passes_unused_window_and_full_layers():
    assert not catches("DF202", target(sliding_window=32768, use_sliding_window=False), draft())
    full = target(sliding_window=4096, use_sliding_window=DELETE, layer_types=["full_attention"] * 36)
    assert not catches("DF202", full, draft())


def test_df201_points_at_the_text_model_type_of_a_wrapper():
    import json
    from pathlib import Path

    from tests.configs import run_rule

    pair = Path(__file__).resolve().parent / "fixtures" / "pairs" / "qwen3.5-35b-a3b"
    cfg = json.loads((pair / "target" / "config.json").read_text())
    [f] = run_rule("DF201", cfg, json.loads((pair / "draft" / "config.json").read_text()))
    assert ("target", "text_config.model_type") in {(loc.artifact, loc.key) for loc in f.locations}
