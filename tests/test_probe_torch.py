"""The meta-device probe: module paths, tied heads, forward signature, cache rollback, layer returns."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.deployment.options import CheckOptions  # noqa: E402
from dflash_compat.inspection import detect_framework, inspect_draft, inspect_target  # noqa: E402
from dflash_compat.inspection.torch_meta import inspect_torch_target  # noqa: E402
from dflash_compat.modelfacts import ModuleFacts, Skipped  # noqa: E402
from dflash_compat.resolve.refs import Resolved  # noqa: E402
from dflash_compat.specs import parse_target_config  # noqa: E402
from tests.deep_helpers import TINY, fixture, probe  # noqa: E402

# name -> (embed_path, lm_head_path, layers_path, tied)
PATHS = {
    "llama": ("model.embed_tokens", "lm_head", "model.layers", False),
    "qwen3": ("model.embed_tokens", "lm_head", "model.layers", False),
    "gpt2": ("transformer.wte", "lm_head", "transformer.h", True),
    "gpt_neox": ("gpt_neox.embed_in", "lm_head", "gpt_neox.layers", False),
    "opt": ("model.decoder.embed_tokens", "lm_head", "model.decoder.layers", True),
    "falcon": ("transformer.word_embeddings", "lm_head", "transformer.h", True),
    "qwen3_vl": ("model.language_model.embed_tokens", "lm_head", "model.language_model.layers", False),
    "qwen3_next": ("model.embed_tokens", "lm_head", "model.layers", False),
    "mistral": ("model.embed_tokens", "lm_head", "model.layers", False),
    "gemma3": ("model.embed_tokens", "lm_head", "model.layers", True),
    "mamba": ("backbone.embeddings", "lm_head", "backbone.layers", True),
    "lfm2": ("model.embed_tokens", "lm_head", "model.layers", True),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_paths_and_tied_head(name):
    m = probe(TINY[name])
    p = m.paths
    assert (p.embed, p.head, p.layers, p.tied) == PATHS[name]
    assert m.skipped is None and p.layers_len == p.config_layers == 4


def test_vlm_is_built_with_the_image_text_to_text_class():
    m = probe(TINY["qwen3_vl"])
    assert m.auto_class == "AutoModelForImageTextToText"
    assert m.paths.decoder == "model.language_model"
    assert m.paths.layers_via == "get_decoder"  # not the vision tower's block list


@pytest.mark.parametrize("name, rollback, bad", [
    ("llama", "crop", []),
    ("qwen3_next", "none", [0, 1, 2]),  # linear attention every layer but each 4th
    ("mamba", "none", [0, 1, 2, 3]),
    ("lfm2", "crop", []),  # short-conv state only: cropping with past recording restores it
    ("mistral", "crop", []),
])
def test_rollback_follows_the_cache_layers(name, rollback, bad):
    cache = probe(TINY[name]).cache
    assert cache.rollback == rollback
    assert list(cache.non_croppable) == bad


def test_cache_layer_classes_are_the_ones_the_model_builds():
    assert probe(TINY["qwen3_next"]).cache.layers == ("LinearAttentionLayer",) * 3 + ("DynamicLayer",)
    assert probe(TINY["mamba"]).cache.layers == ("LinearAttentionLayer",) * 4
    assert probe(TINY["lfm2"]).cache.conv_state == (0, 2)


def test_sliding_window_layers_found_in_the_cache():
    cache = probe(TINY["mistral"]).cache
    assert cache.layers == ("DynamicSlidingWindowLayer",) * 4
    assert cache.sliding == (0, 1, 2, 3) and cache.sliding_window == 32
    assert cache.past_recording is True
    assert probe(TINY["llama"]).cache.sliding == ()


def test_gemma_scaled_embedding_and_softcap():
    m = probe(TINY["gemma3"])
    assert m.scaling.embed_scaled and m.scaling.embed_scale == pytest.approx(8.0)  # sqrt(64)
    assert m.paths.embed_class == "Gemma3TextScaledWordEmbedding"
    assert m.scaling.logit_softcap == 30.0
    assert not probe(TINY["llama"]).scaling.embed_scaled


def test_layer_returns_from_the_code_not_the_annotation():
    assert probe(TINY["falcon"]).layer_returns.kind == "tuple"  # returns (output, attn_weights)
    assert probe(TINY["gemma3"]).layer_returns.kind == "tensor"  # annotated tuple[...], returns hidden_states
    assert probe(TINY["llama"]).layer_returns.kind == "tensor"


def test_forward_signature():
    import inspect

    import transformers

    m = probe(TINY["llama"])
    how = m.forward.how
    if "cache" in inspect.signature(transformers.LlamaForCausalLM.forward).parameters:
        # newer transformers 5 (5.2x): `cache`, with past_key_values a deprecated alias
        assert how["cache"] == "explicit" and how["past_key_values"] == "deprecated-alias"
        assert m.forward.deprecated_kwargs["past_key_values"].new_name == "cache"
        assert m.crop_semantics == "negative-count"
    else:  # older releases (5.17: modeling_llama.py LlamaForCausalLM.forward takes past_key_values)
        assert how["past_key_values"] == "explicit" and how["cache"] == "kwargs-passthrough"
        assert "past_key_values" not in m.forward.deprecated_kwargs
        assert m.crop_semantics == "absolute-length"
    assert how["output_hidden_states"] == "kwargs"
    assert set(m.forward.accepts) >= {"position_ids", "use_cache", "logits_to_keep", "output_hidden_states"}
    assert m.forward.output_has_hidden_states and m.forward.output_has_logits


def test_gpt2_records_hidden_states_without_a_typed_kwarg():
    # GPT-2's forward has untyped **kwargs; its output recorder still honours output_hidden_states.
    assert probe(TINY["gpt2"]).forward.how["output_hidden_states"] == "kwargs"


def test_legacy_fixed_paths():
    assert probe(TINY["llama"]).paths.has_model_embed_tokens is True
    assert probe(TINY["gpt2"]).paths.has_model_embed_tokens is False


# --- full-size configs on the meta device ------------------------------------------------------------------


@pytest.mark.parametrize("name, layers, classes", [
    ("qwen3-8b", 36, ["Qwen3DecoderLayer"]),
    ("llama-3.1-70b", 80, ["LlamaDecoderLayer"]),
    ("deepseek-v3", 61, ["DeepseekV3DecoderLayer"]),
    ("qwen3.5-35b-a3b", 40, ["Qwen3_5MoeDecoderLayer"]),
])
def test_full_size_configs(name, layers, classes):
    p = probe(fixture(name)).paths
    assert (p.embed, p.head, p.layers) == ("model.embed_tokens", "lm_head", "model.layers")
    assert p.layers_len == layers and list(p.layer_classes) == classes
    assert p.tied is False


def test_full_size_hybrid_cannot_be_cropped():
    cache = probe(fixture("qwen3.5-35b-a3b")).cache
    assert cache.rollback == "none"
    assert len(cache.non_croppable) == 30  # 3 of every 4 layers are GatedDeltaNet
    assert cache.layers[3] == "DynamicLayer"


def test_deepseek_auto_map_is_not_imported_but_the_built_in_class_is_used():
    m = probe(fixture("deepseek-v3"))
    assert m.model_class == "DeepseekV3ForCausalLM"
    assert m.auto_map_not_imported and "DeepseekV3ForCausalLM" in m.notes[0]


# --- remote code, missing dependencies, unknown models -----------------------------------------------------

REMOTE_CONFIG = {
    "architectures": ["TinyForCausalLM"], "model_type": "tiny_remote_xyz", "hidden_size": 32, "vocab_size": 100,
    "num_hidden_layers": 2,
    "auto_map": {"AutoConfig": "configuration_tiny.TinyConfig", "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"},
}
REMOTE_CODE = {
    "configuration_tiny.py": '''
from transformers import PretrainedConfig
class TinyConfig(PretrainedConfig):
    model_type = "tiny_remote_xyz"
    def __init__(self, hidden_size=32, vocab_size=100, num_hidden_layers=2, **kw):
        self.hidden_size, self.vocab_size, self.num_hidden_layers = hidden_size, vocab_size, num_hidden_layers
        super().__init__(**kw)
''',
    "modeling_tiny.py": '''
import torch.nn as nn
from transformers import PreTrainedModel
from .configuration_tiny import TinyConfig
open(__MARKER__, "w").write("ran")  # proof the repo's code ran (a file of this test only)
class TinyForCausalLM(PreTrainedModel):
    config_class = TinyConfig
    def __init__(self, config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size) for _ in range(config.num_hidden_layers))
        self.out = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
    def forward(self, input_ids, attention_mask=None):
        return self.out(self.wte(input_ids))
''',
}


def _remote_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "remote"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(REMOTE_CONFIG))
    for name, code in REMOTE_CODE.items():
        (folder / name).write_text(code.replace("__MARKER__", repr(str(tmp_path / "remote-code-ran"))))
    return folder


def _inspect(folder: Path, trust: bool):
    t = parse_target_config(json.loads((folder / "config.json").read_text()), str(folder))
    return inspect_torch_target(Resolved(ref=str(folder), folder=folder), t, CheckOptions(trust_remote_code=trust))


def test_remote_code_is_never_imported_without_trust(tmp_path):
    m = _inspect(_remote_folder(tmp_path), trust=False)
    assert isinstance(m, Skipped) and (m.reason, m.framework) == ("remote-code", "torch")
    assert "--trust-remote-code" in m.detail and not (tmp_path / "remote-code-ran").exists()


def test_remote_code_is_inspected_with_trust(tmp_path, monkeypatch):
    import transformers.dynamic_module_utils as dmu

    # transformers copies trusted code into its modules cache: keep it in tmp, not in the user's ~/.cache.
    monkeypatch.setattr(dmu, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    m = _inspect(_remote_folder(tmp_path), trust=True)
    assert isinstance(m, ModuleFacts) and m.skipped is None, m
    assert (tmp_path / "remote-code-ran").exists()  # the marker can tell: trusted code did run
    # No accessors: found by the structural search (vocab-sized Embedding and Linear, the layer list).
    assert (m.paths.embed, m.paths.head, m.paths.layers) == ("wte", "out", "blocks")
    assert m.paths.embed_via == "search"
    assert m.forward.how["position_ids"] == "no"


def test_torch_missing_is_a_skip_not_a_failure(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    t = parse_target_config(TINY["llama"], "t")
    m = inspect_torch_target(Resolved(ref="t", folder=Path("/nonexistent")), t, CheckOptions())
    assert isinstance(m, Skipped) and m.reason == "torch-missing"


def test_unknown_model_type_is_a_skip():
    t = parse_target_config({"architectures": ["NopeForCausalLM"], "model_type": "nope_xyz", "hidden_size": 8}, "t")
    m = inspect_torch_target(Resolved(ref="t", folder=Path("/nonexistent")), t, CheckOptions())
    assert isinstance(m, Skipped) and m.reason == "unknown-model-type" and "nope_xyz" in m.detail


def test_mlx_checkpoints_dispatch_to_the_mlx_inspector(tmp_path, monkeypatch):
    cfg = dict(TINY["llama"], quantization={"group_size": 64, "bits": 4})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    t = parse_target_config(cfg, str(tmp_path))
    res = Resolved(ref=str(tmp_path), folder=tmp_path)
    assert detect_framework(res) == "mlx"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(TINY["llama"]))
    assert detect_framework(Resolved(ref=str(plain), folder=plain)) == "torch"
    from dflash_compat.exceptions import MissingDependencyError
    from dflash_compat.inspection import mlx_build

    def no_mlx(*args, **kwargs):
        raise MissingDependencyError("mlx is not installed")

    monkeypatch.setattr(mlx_build, "import_mlx", no_mlx)  # as on a machine without mlx (buildable_config asks it)
    m = inspect_target(res, t, CheckOptions(), "auto")
    assert isinstance(m, Skipped) and (m.reason, m.framework) == ("mlx-inspector-missing", "mlx")


def test_probes_return_facts_and_leave_the_specs_alone(tmp_path):
    from tests.deep_helpers import tiny_draft, write_draft

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps(TINY["qwen3"]))
    dfolder = write_draft(tmp_path / "d", tiny_draft(TINY["qwen3"]))
    target = parse_target_config(TINY["qwen3"], "t")
    before = target.model_dump()
    modules = inspect_target(Resolved("t", tmp_path / "t"), target, CheckOptions(), "torch")
    weights = inspect_draft(Resolved("d", dfolder))
    assert modules.paths.layers == "model.layers" and weights.tensor_count == 25
    assert target.model_dump() == before


# --- --adapter and inspector failures --------------------------------------------------------------------------


def _probe_with(name: str, **options):
    t = parse_target_config(TINY[name], "t")
    return t, inspect_torch_target(Resolved(ref="t", folder=Path("/nonexistent")), t, CheckOptions(**options))


def test_adapter_paths_are_those_of_the_users_model():
    _, m = _probe_with("gpt2", adapter="gpt2")
    assert (m.paths.embed, m.paths.head, m.paths.layers) == ("transformer.wte", "lm_head", "transformer.h")
    assert m.paths.decoder == "transformer" and m.adapter == "gpt2"
    assert m.cache.rollback == "crop" and m.cache.layers


def test_adapter_cache_facts_come_from_the_users_model_class(monkeypatch):
    from transformers import GPT2LMHeadModel

    # a model that keeps its own state: the wrapper must not hide the class-level flag
    monkeypatch.setattr(GPT2LMHeadModel, "_supports_default_dynamic_cache", classmethod(lambda cls: False),
                        raising=False)
    _, m = _probe_with("gpt2", adapter="gpt2")
    assert m.cache.model_managed and m.cache.rollback == "none"


def test_locate_failure_is_a_skip_not_a_finding(monkeypatch):
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.inspection import torch_meta
    from dflash_compat.rules import RULES_BY_CODE
    from dflash_compat.specs import parse_draft_config
    from tests.deep_helpers import tiny_draft

    D = parse_draft_config(tiny_draft(TINY["llama"]), "d")

    def locate(model, target):
        raise RuntimeError("inspector bug")

    monkeypatch.setattr(torch_meta, "locate", locate)
    t, m = _probe_with("llama")
    assert m.skipped.reason == "inspection-failed" and m.paths is None
    assert any("inspector bug" in n for n in m.notes)
    ctx = RuleContext(target=t, draft=D, options=CheckOptions(), modules=m)
    found = run_rules(ctx, [RULES_BY_CODE[c] for c in ("DF006", "DF701", "DF702", "DF703")], ["transformers"])
    assert {f.code for f in found} == {"DF006"} and "inspector bug" in found[0].message


def test_other_fact_errors_are_reported_by_df006(monkeypatch):
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.inspection import torch_meta
    from dflash_compat.rules import RULES_BY_CODE
    from dflash_compat.specs import parse_draft_config
    from tests.deep_helpers import tiny_draft

    D = parse_draft_config(tiny_draft(TINY["llama"]), "d")

    def forward_facts(model):
        raise RuntimeError("odd forward")

    monkeypatch.setattr(torch_meta, "forward_facts", forward_facts)
    t, m = _probe_with("llama")
    assert m.skipped is None and m.paths.layers == "model.layers" and m.forward is None
    ctx = RuleContext(target=t, draft=D, options=CheckOptions(), modules=m)
    (f,) = run_rules(ctx, [RULES_BY_CODE["DF006"]], ["transformers"])
    assert "forward_facts: RuntimeError: odd forward" in f.message
