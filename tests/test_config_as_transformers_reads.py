"""Configs as transformers reads them ({"__float__": ...} tags decoded), and module paths for every layout the
zoo builds, found by the one locator the check, smoke and adapt share (adapters/locate.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dflash_compat.exceptions import ConfigError
from dflash_compat.files.safe_read import decode_float_tags, parse_json
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import parse_target_config
from tests.deep_helpers import probe


def test_float_tags_decode_as_transformers_decodes_them():
    raw = {"time_step_limit": [0.0, {"__float__": "Infinity"}], "low": {"__float__": "-Infinity"},
           "nan": {"__float__": "NaN"}, "nested": {"list": [[{"__float__": "Infinity"}]]}}
    out = decode_float_tags(raw)
    assert out["time_step_limit"] == [0.0, math.inf] and out["low"] == -math.inf and math.isnan(out["nan"])
    assert out["nested"]["list"][0][0] == math.inf
    assert raw["low"] == {"__float__": "-Infinity"}  # the input is not changed


@pytest.mark.parametrize("kept", [
    {"__float__": "infinity"},  # unknown spelling: transformers keeps the object
    {"__float__": "Infinity", "other": 1},  # a tag beside other keys is not a tag
    {"__float__": 1.5},  # not a string
])
def test_objects_that_are_not_tags_stay(kept):
    assert decode_float_tags({"x": kept}) == {"x": kept}


def test_the_installed_transformers_decodes_the_same():
    from transformers import PreTrainedConfig

    raw = {"a": [1, {"__float__": "Infinity"}, {"__float__": "x"}], "b": {"__float__": "-Infinity", "c": 1}}
    assert decode_float_tags(raw) == PreTrainedConfig._decode_special_floats(raw)


def test_config_json_is_decoded_other_files_are_not(tmp_path):
    (tmp_path / "config.json").write_text('{"x": {"__float__": "Infinity"}, "y": NaN}')
    (tmp_path / "tokenizer_config.json").write_text('{"x": {"__float__": "Infinity"}}')
    r = Resolved(ref=str(tmp_path), folder=tmp_path,
                 files={n: tmp_path / n for n in ("config.json", "tokenizer_config.json")})
    assert r.json("config.json")["x"] == math.inf and math.isnan(r.json("config.json")["y"])
    assert r.json("tokenizer_config.json") == {"x": {"__float__": "Infinity"}}


def test_a_tagged_size_is_still_refused():
    # decoding gives a float; a size must be an integer: the specs refuse it as before
    raw = decode_float_tags(parse_json('{"model_type": "llama", "hidden_size": {"__float__": "Infinity"}}'))
    with pytest.raises(ConfigError):
        parse_target_config(raw, "target")


def _saved(model_type: str, tmp_path: Path, **kw) -> dict:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    CONFIG_MAPPING[model_type](**kw).save_pretrained(str(tmp_path))
    text = (tmp_path / "config.json").read_text()
    return json.loads(text)


@pytest.mark.parametrize("model_type,kw", [
    ("mamba2", dict(hidden_size=64, num_hidden_layers=2, vocab_size=128, num_heads=8, head_dim=16, n_groups=1)),
    ("falcon_h1", dict(hidden_size=64, num_hidden_layers=2, vocab_size=128, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=128)),
    ("nemotron_h", dict(hidden_size=64, num_hidden_layers=2, vocab_size=128, num_attention_heads=4,
                        num_key_value_heads=2, hybrid_override_pattern="M*")),
])
def test_mamba2_family_builds_and_has_module_paths(tmp_path, model_type, kw):
    raw = _saved(model_type, tmp_path, **kw)
    assert "__float__" in json.dumps(raw)  # transformers wrote the tag
    r = Resolved(ref=str(tmp_path), folder=tmp_path, files={"config.json": tmp_path / "config.json"})
    facts = probe(r.json("config.json"))
    assert getattr(facts, "skipped", None) is None, facts
    p = facts.paths
    assert p.embed and p.head and p.layers and p.layers_len == 2, p


def test_xlm_layer_output_is_the_post_norm_list():
    # XLM keeps parallel per-sub-layer lists; hidden_states[i + 1] is layer_norm2[i]'s output
    cfg = {"architectures": ["XLMWithLMHeadModel"], "model_type": "xlm", "emb_dim": 64, "n_layers": 3, "n_heads": 4,
           "vocab_size": 128}
    facts = probe(cfg)
    assert facts.paths.layers == "transformer.layer_norm2" and facts.paths.layers_len == 3


def test_xlm_hidden_size_is_read_from_emb_dim():
    t = parse_target_config({"model_type": "xlm", "emb_dim": 64, "n_layers": 3, "n_heads": 4, "vocab_size": 128},
                            "target")
    assert t.hidden_size == 64 and t.num_hidden_layers == 3 and t.num_attention_heads == 4


def test_xlm_layer_norm2_outputs_are_the_hidden_states():
    # the locator's choice checked against transformers' own hidden_states on a real (random) model
    import torch
    from transformers import XLMConfig, XLMWithLMHeadModel

    from dflash_compat.adapters.locate import locate_modules

    torch.manual_seed(0)
    model = XLMWithLMHeadModel(XLMConfig(emb_dim=32, n_layers=2, n_heads=4, vocab_size=64)).eval()
    found = locate_modules(model)
    outs = []
    hooks = [m.register_forward_hook(lambda _m, _a, o: outs.append(o)) for m in found.layers]
    with torch.no_grad():
        ref = model(torch.tensor([[1, 2, 3]]), output_hidden_states=True).hidden_states
    for h in hooks:
        h.remove()
    for i, out in enumerate(outs):
        torch.testing.assert_close(out, ref[i + 1])


def test_df206_catches_an_output_without_cache_and_passes_a_causal_lm():
    # XLMWithLMHeadModel returns MaskedLMOutput: transformers' native DFlash reads outputs.cache and crashes
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.deployment.options import CheckOptions
    from dflash_compat.rules import RULES_BY_CODE
    from dflash_compat.specs import parse_draft_config
    from tests.deep_helpers import TINY, tiny_draft

    xlm = {"architectures": ["XLMWithLMHeadModel"], "model_type": "xlm", "emb_dim": 64, "n_layers": 4, "n_heads": 4,
           "vocab_size": 1000}
    draft = parse_draft_config(tiny_draft(TINY["qwen3"]), "d")

    def df206(cfg):
        ctx = RuleContext(target=parse_target_config(cfg, "t"), draft=draft, options=CheckOptions(),
                           modules=probe(cfg))
        return run_rules(ctx, [RULES_BY_CODE["DF206"]], ("transformers",))

    [f] = df206(xlm)
    assert f.severity == "error" and "MaskedLMOutput" in f.message
    assert df206(TINY["qwen3"]) == []


def test_df207_catches_a_forward_without_position_ids_and_passes_llama():
    # generate() makes position_ids only for a forward that names them; the native DFlash generator reads them
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.deployment.options import CheckOptions
    from dflash_compat.rules import RULES_BY_CODE
    from dflash_compat.specs import parse_draft_config
    from tests.deep_helpers import TINY, tiny_draft

    draft = parse_draft_config(tiny_draft(TINY["qwen3"]), "d")

    def df207(cfg):
        ctx = RuleContext(target=parse_target_config(cfg, "t"), draft=draft, options=CheckOptions(),
                           modules=probe(cfg))
        return run_rules(ctx, [RULES_BY_CODE["DF207"]], ("transformers",))

    [f] = df207(TINY["mamba"])
    assert f.severity == "error" and "KeyError: 'position_ids'" in f.message
    assert df207(TINY["llama"]) == []


def test_nemotron_h_layer_count_comes_from_its_block_types():
    # transformers 5.25.0 saves layers_block_type and derives num_hidden_layers from it
    raw = {"model_type": "nemotron_h", "hidden_size": 64, "vocab_size": 128,
           "layers_block_type": ["linear_attention", "moe", "full_attention", "mlp"]}
    t = parse_target_config(raw, "target")
    assert t.num_hidden_layers == 4 and t.key("num_hidden_layers") == "layers_block_type"
    assert parse_target_config(dict(raw, num_hidden_layers=6), "target").num_hidden_layers == 6
