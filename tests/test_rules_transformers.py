"""DF2xx: the transformers paths (the dflash reference and transformers' own generate), decided from configs."""

import json
from pathlib import Path

import pytest

from tests.configs import DELETE, catches, draft, merge, run_rule, speculators_draft, target

FAMILIES = Path(__file__).resolve().parent / "fixtures" / "families"

NEXT_TYPES = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 9


def test_df201_catches_hybrid_layer_types():
    [f] = run_rule("DF201", target(model_type="qwen3_next", layer_types=NEXT_TYPES), draft(), backends=("dflash",))
    assert "27 of its 36 layers" in f.message
    assert f.backend == "dflash"
    assert [loc.key for loc in f.locations] == ["layer_types", "model_type"]


# --- DF201 on transformers' native generate: refused before 5.25.0, rolled back from 5.25.0 where the
# model's code records its recurrent state per step (the deep check reads that from the modeling code)
def _native_df201(monkeypatch, version, cache=None):
    import dataclasses

    from dflash_compat.engines.registry import select_versions

    spec = f"transformers=={version}"  # the release judged (--engine-version), not the installed one
    if cache is None:
        return run_rule("DF201", target(model_type="qwen3_next", layer_types=NEXT_TYPES), draft(),
                        backends=("transformers",), versions=[spec])
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.deployment.options import CheckOptions
    from dflash_compat.modelfacts import ModuleFacts
    from dflash_compat.rules import RULES_BY_CODE
    from dflash_compat.specs import parse_draft_config, parse_target_config

    facts = dataclasses.replace(ModuleFacts(framework="torch"), cache=cache)
    ctx = RuleContext(target=parse_target_config(target(model_type="qwen3_next", layer_types=NEXT_TYPES), "t"),
                       draft=parse_draft_config(draft(), "d"), options=CheckOptions(), modules=facts,
                       versions=select_versions(option=(spec,), installed=False))
    return run_rules(ctx, [RULES_BY_CODE["DF201"]], ("transformers",))


def test_df201_native_generate_refuses_recurrent_targets_before_5_25(monkeypatch):
    [f] = _native_df201(monkeypatch, "5.24.0")
    assert f.backend == "transformers" and f.severity == "error" and "stateful" in f.message


def test_df201_native_generate_runs_a_hybrid_the_release_does_not_mark_stateful():
    """5.24.0 refuses `_is_stateful` classes only (generation/utils.py:1885-1890); LFM2's model type fills
    layer_types with conv layers but its class is not stateful there: generate runs it, and the crop after each
    verify cannot roll the conv state back."""
    from dflash_compat.engines.store import release

    facts = release("transformers", "5.24.0").facts
    assert "lfm2" in facts["recurrent_layer_model_types"] and "lfm2" not in facts["stateful_model_types"]
    [f] = run_rule("DF201", target(model_type="lfm2"), draft(), backends=("transformers",),
                   versions=["transformers==5.24.0"])
    assert f.severity == "error" and "does not mark this model type stateful" in f.message
    assert "refuses" not in f.message and "not lossless" in f.message


def test_df201_native_generate_rolls_back_where_the_model_records_history(monkeypatch):
    from dflash_compat.modelfacts import CacheFacts

    assert _native_df201(monkeypatch, "5.25.0", CacheFacts(rollback="none", non_croppable=(0,),
                                                           recurrent_history=True)) == []
    [f] = _native_df201(monkeypatch, "5.25.0", CacheFacts(rollback="none", non_croppable=(0,),
                                                          recurrent_history=False))
    assert f.severity == "error" and "get_recurrent_states_to_keep" in f.message
    [f] = _native_df201(monkeypatch, "5.25.0")  # no module tree: not judged, a warning
    assert f.severity == "warning"


def test_df201_catches_recurrent_model_type_without_layer_list():
    assert catches("DF201", target(model_type="falcon_h1"), draft())


def test_df201_fix_names_only_flags_that_exist():
    [f] = run_rule("DF201", target(model_type="falcon_h1"), draft(), backends=("dflash",))
    assert "--mamba-scheduler-strategy" not in f.fix  # SGLang 0.5.23 has no such flag; DFLASH commits the state
    assert "SGLang" in f.fix


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
    [f] = run_rule("DF201", cfg, json.loads((pair / "draft" / "config.json").read_text()), backends=("dflash",))
    assert ("target", "text_config.model_type") in {(loc.artifact, loc.key) for loc in f.locations}


# --- DF203 transformers' own generate(speculation_type="dflash")
def test_df203_notes_nested_only_keys_of_a_draft_of_no_known_family():
    [f] = run_rule("DF203", target(), draft(architectures=["DFlash3DraftModel"]))
    assert f.backend == "transformers" and f.severity == "info" and "AttributeError" in f.message
    assert [loc.key for loc in f.locations] == ["target_layer_ids", "mask_token_id"]  # block_size is top-level


def test_df203_is_silent_on_nested_keys_of_z_lab_drafts():
    # z-lab drafts run through the dflash package (it reads dflash_config), never through generate(), which
    # calls the assistant with noise_embeds= / context_hidden_states= (candidate_generator.py:1636-1642).
    assert not catches("DF203", target(), draft())
    assert not catches("DF203", target(), draft(architectures=["DFlash2DraftModel"]))


def test_df203_warns_when_the_assistant_leaves_a_key_to_its_config_class():
    assistant = json.loads((FAMILIES / "assistant-config.json").read_text())
    assert not catches("DF203", target(), assistant)  # the published assistant config has all three
    [f] = run_rule("DF203", target(), merge(assistant, block_size=DELETE))
    assert f.severity == "warning" and "block_size=16" in f.message


def test_df204_is_for_the_drafts_the_dflash_package_builds():
    assistant = json.loads((FAMILIES / "assistant-config.json").read_text())  # no num_target_layers: not needed
    assert not catches("DF204", target(), assistant)  # transformers builds it with its own class


def test_df203_warns_when_the_top_level_ids_differ():
    cfg = draft(target_layer_ids=[2, 10, 18, 26, 34], mask_token_id=151669)
    [f] = run_rule("DF203", target(), cfg)
    assert f.severity == "warning" and "[2, 10, 18, 26, 34]" in f.message


def test_df203_passes_top_level_keys_and_other_engines():
    cfg = draft(target_layer_ids=[1, 9, 17, 25, 33], mask_token_id=151669)
    assert not catches("DF203", target(), cfg)
    assert not catches("DF203", target(), draft(), backends=("vllm", "sglang", "mlx"))
    assert not catches("DF203", target(), speculators_draft())


# --- DF204 num_target_layers for the dflash reference
def test_df204_catches_ids_without_num_target_layers():
    [f] = run_rule("DF204", target(), draft(num_target_layers=DELETE))
    assert f.backend == "dflash" and f.severity == "error" and "AttributeError" in f.message


def test_df204_passes_published_drafts_and_leaves_no_ids_to_df103():
    assert not catches("DF204", target(), draft())
    assert not catches("DF204", target(), draft(num_target_layers=DELETE, **{"dflash_config.target_layer_ids": DELETE}))
    assert not catches("DF204", target(), speculators_draft())


def test_df204_agrees_with_the_dflash_package():
    """The rule's claim, checked against dflash 0.1.0 itself (a test oracle, built on the meta device)."""
    torch = pytest.importorskip("torch")
    model = pytest.importorskip("dflash.model")
    from transformers import Qwen3Config

    cfg = draft(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                vocab_size=256, num_hidden_layers=2, **{"dflash_config.target_layer_ids": [1, 3],
                                                        "dflash_config.mask_token_id": 255})
    for config, fails in ((cfg, False), ({k: v for k, v in cfg.items() if k != "num_target_layers"}, True)):
        assert catches("DF204", target(), config) is fails
        with torch.device("meta"):
            if fails:
                with pytest.raises(AttributeError, match="num_target_layers"):
                    model.DFlashDraftModel(Qwen3Config(**config))
            else:
                assert model.DFlashDraftModel(Qwen3Config(**config)).target_layer_ids == [1, 3]


# --- DF205 the reference runtime's draft RoPE
@pytest.mark.parametrize("changes, text", [
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "RoPE type 'dynamic'"),
    ({"rope_scaling": {"rope_type": "longrope", "factor": 2.0}}, "RoPE type 'longrope'"),
    ({"rope_scaling": {"rope_type": "default", "mrope_section": [16, 24, 24]}}, "mrope_section"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}, "partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5"),
])
def test_df205_catches_rope_the_runtime_does_not_implement(changes, text):
    found = run_rule("DF205", target(), draft(**changes))
    assert {f.backend for f in found} == {"dflash", "mlx"} and all(f.severity == "warning" for f in found)
    assert text in found[0].message and "dflash-check smoke" in found[0].message


def test_df205_passes_static_rope_and_a_partial_factor_with_default_rope():
    assert not catches("DF205", target(), draft())
    assert not catches("DF205", target(), draft(rope_scaling={"rope_type": "yarn", "factor": 4.0}))
    assert not catches("DF205", target(), draft(partial_rotary_factor=0.5))  # rotated over the whole head
    proportional = {"rope_type": "proportional", "factor": 1.0, "partial_rotary_factor": 0.25}
    assert not catches("DF205", target(), draft(rope_parameters=proportional))


def test_df205_agrees_with_the_runtime():
    from dflash_compat.exceptions import RuntimeUnsupportedError
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.specs import parse_draft_config

    for changes in ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, {"partial_rotary_factor": 0.5}):
        spec = parse_draft_config(draft(**changes), "d")
        refused = catches("DF205", target(), draft(**changes))
        try:
            draft_config(spec)
            ran = True
        except RuntimeUnsupportedError as exc:
            ran = False
            assert "DF205" in str(exc)
        assert ran is not refused, changes
