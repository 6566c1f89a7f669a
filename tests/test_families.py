"""Draft families: each is detected with its own format, keeps the key every value came from, and
non-DFlash configs are one-line errors naming what they look like (DF005 for unknown DFlash-style ones)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.exceptions import NotADraftError
from dflash_compat.specs import parse_draft_config
from dflash_compat.specs.families import FAMILIES
from tests.configs import DELETE, catches, draft, merge, speculators_draft, target, write_model

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "families"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


# One config per family, bent from the known-good Qwen3-8B draft only where the family differs.
FAMILY_CONFIGS = {
    "zlab-v1": draft(),
    "zlab-v2": draft(architectures=["DFlash2DraftModel"]),
    "dflash2-beam": draft(architectures=["DFlash2BeamDraftModel"]),
    "ricursive-dflash2": draft(architectures=["DFlash2RicursiveDraftModel"], no_rope_layers=[0]),
    "minimax-dflash2": draft(architectures=["MiniMaxDFlash2DraftModel"]),
    "muse-glimmer-assistant": fixture("assistant-config.json"),
    "qwen3-xpress": draft(architectures=["Qwen3XPressModel"], xpress_rank=128),
    "lilicorr": draft(architectures=["LiLiCorrDraftModel"], **{"dflash_config.lilicorr_num_layers": 2}),
    "laguna-dflash": draft(architectures=["LagunaForCausalLM"]),
    "domino": draft(**{"dflash_config.projector_type": "domino", "dflash_config.gru_hidden_dim": 256}),
    "speculators": speculators_draft(),
    "speculators-dflash2": speculators_draft(speculators_model_type="dflash2", architectures=["DFlash2DraftModel"],
                                             conv_kernel_size=2, conv_group_size=16, selector_rank=256,
                                             selector_top_k=16),
}


@pytest.mark.parametrize("fmt", sorted(FAMILY_CONFIGS))
def test_each_family_gets_its_own_format(fmt):
    d = parse_draft_config(FAMILY_CONFIGS[fmt], "d")
    assert d.format == fmt and d.family == FAMILIES[fmt].title


def test_every_family_but_unknown_has_a_config_here():
    assert set(FAMILY_CONFIGS) == set(FAMILIES) - {"unknown"}


@pytest.mark.parametrize("arch, fmt", [
    ("DFlashMuseGlimmerAssistantModel", "muse-glimmer-assistant"),  # vLLM's renamed spelling
    ("DFlashQwen3XPressModel", "qwen3-xpress"),
    ("DFlashLagunaForCausalLM", "laguna-dflash"),
])
def test_vllm_renamed_architectures_are_the_same_family(arch, fmt):
    assert parse_draft_config(draft(architectures=[arch]), "d").format == fmt


def test_muse_glimmer_assistant_reads_top_level_keys_and_records_what_it_inherits():
    d = parse_draft_config(fixture("assistant-config.json"), "d")
    assert (d.block_size, d.mask_token_id, d.target_layer_ids) == (16, 201818, [1, 13, 25, 37, 49])
    assert (d.sources["block_size"], d.sources["mask_token_id"], d.sources["target_layer_ids"]) == (
        "block_size", "mask_token_id", "target_layer_ids")
    assert d.vocab_size is None and d.rope.theta == 500000.0
    (vocab,) = d.inherited
    assert (vocab.field, vocab.value, vocab.origin) == ("vocab_size", None, "target")
    assert "vllm/config/speculative.py:1159-1166" in vocab.detail and "202048" in vocab.detail


def test_muse_glimmer_assistant_defaults_are_filled_and_recorded():
    cfg = merge(fixture("assistant-config.json"), block_size=DELETE, target_layer_ids=DELETE)
    d = parse_draft_config(cfg, "d")
    assert (d.block_size, d.target_layer_ids) == (16, [1, 13, 25, 37, 49])
    assert {i.field for i in d.inherited} == {"block_size", "target_layer_ids", "vocab_size"}
    assert all("configuration_muse_glimmer_assistant.py" in i.detail for i in d.inherited if i.origin == "default")


def test_dflash2_fixture_reads_nested_keys():
    d = parse_draft_config(fixture("dflash2-config.json"), "d")
    assert d.format == "zlab-v2" and d.is_causal is False
    assert (d.block_size, d.mask_token_id, d.target_layer_ids) == (16, 201818, [1, 13, 25, 37, 49])
    assert (d.conv_kernel_size, d.conv_group_size, d.selector_rank, d.selector_top_k) == (2, 16, 256, 16)
    assert d.sources["selector_rank"] == "dflash_config.selector_rank" and d.inherited == []


def test_speculators_dflash2_is_not_read_as_zlab_v2():
    d = parse_draft_config(FAMILY_CONFIGS["speculators-dflash2"], "d")
    assert d.is_speculators and d.has_v2_layers
    assert d.target_layer_ids == [1, 9, 17, 25, 33]  # aux ids - 1
    assert (d.conv_kernel_size, d.sources["conv_kernel_size"]) == (2, "conv_kernel_size")
    assert d.sources["hidden_size"] == "transformer_layer_config.hidden_size"


def test_speculators_config_without_model_type_is_speculators():
    cfg = speculators_draft(speculators_model_type=DELETE, architectures=DELETE)
    assert parse_draft_config(cfg, "d").format == "speculators"


def test_family_extras_keep_their_keys():
    d = parse_draft_config(FAMILY_CONFIGS["domino"], "d")
    assert d.projector_type == "domino" and d.sources["projector_type"] == "dflash_config.projector_type"
    assert d.domino.gru_hidden_dim == 256 and d.domino.emb_dim is None
    assert d.sources["domino.gru_hidden_dim"] == "dflash_config.gru_hidden_dim"
    x = parse_draft_config(FAMILY_CONFIGS["qwen3-xpress"], "d")
    assert x.xpress.rank == 128 and x.xpress.mlp_hidden is None and x.sources["xpress.rank"] == "xpress_rank"
    assert x.domino is None and x.lilicorr is None and d.xpress is None
    assert {i.field for i in x.inherited} == {"xpress_block_size", "xpress_mlp_hidden"}


@pytest.mark.parametrize("cfg, looks", [
    ({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "draft_vocab_size": 32000}, "an EAGLE-3 draft"),
    ({"speculators_model_type": "eagle3", "speculators_config": {}}, "an EAGLE-3 draft"),
    ({"architectures": ["EagleLlamaForCausalLM"], "model_type": "llama"}, "an EAGLE draft"),
    ({"architectures": ["DeepSeekMTPModel"], "model_type": "deepseek_mtp"}, "an MTP draft"),
    ({"architectures": ["MedusaModel"], "medusa_num_heads": 4}, "a Medusa draft"),
    ({"architectures": ["Qwen3DSparkModel"], "target_layer_ids": [1, 2], "mask_token_id": 5}, "a DSpark draft"),
    (target(), "a language model"),
])
def test_non_dflash_drafts_are_one_line_errors_naming_what_they_look_like(cfg, looks):
    with pytest.raises(NotADraftError) as exc:
        parse_draft_config(cfg, "d")
    msg = str(exc.value)
    assert f"describes no DFlash draft: it looks like {looks}" in msg and "\n" not in msg


def test_a_config_that_looks_like_nothing_keeps_the_old_message():
    with pytest.raises(NotADraftError, match="describes no DFlash draft"):
        parse_draft_config({"hidden_size": 8}, "d")


def test_cli_exit_2_for_an_eagle3_draft(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"})
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep"])
    assert res.exit_code == 2
    assert "looks like an EAGLE-3 draft" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("cfg", [
    draft(architectures=["DFlash3DraftModel"]),
    draft(architectures=["Qwen3ForCausalLM"]),  # a plain class name with a dflash_config
    merge(fixture("assistant-config.json"), architectures=["SomeBlockDrafter"], model_type="other"),
])
def test_unknown_dflash_looking_drafts_are_read_and_get_df005(cfg):
    d = parse_draft_config(cfg, "d")
    assert d.format == "unknown"
    assert catches("DF005", target(), cfg)


@pytest.mark.parametrize("fmt", sorted(FAMILY_CONFIGS))
def test_df005_passes_every_known_family(fmt):
    assert not catches("DF005", target(), FAMILY_CONFIGS[fmt])


def test_unknown_family_runs_the_config_rules_without_crashing(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft(architectures=["DFlash3DraftModel"]))
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep", "-f", "json"])
    assert res.exit_code in (0, 1), res.output
    codes = {f["code"] for f in json.loads(res.output)["findings"]}
    assert "DF005" in codes and "DF009" not in codes


@pytest.mark.parametrize("fmt", ["muse-glimmer-assistant", "qwen3-xpress", "speculators-dflash2"])
def test_a_draft_of_any_family_passed_as_target_is_refused(fmt):
    from dflash_compat.exceptions import ConfigError
    from dflash_compat.specs import parse_target_config

    with pytest.raises(ConfigError, match="not a target"):
        parse_target_config(FAMILY_CONFIGS[fmt], "t")


def test_the_text_report_lists_what_the_draft_config_leaves_out(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", fixture("assistant-config.json"))
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep"], env={"COLUMNS": "200"})
    line = next(line for line in res.output.splitlines() if "not in the draft config" in line)
    assert "vocab_size = the target's" in line and "202048" in line
    report = json.loads(CliRunner().invoke(cli, [str(t), "--draft", str(d), "--no-deep", "-f", "json"]).output)
    assert [i["field"] for i in report["draft"]["inherited"]] == ["vocab_size"]


@pytest.mark.parametrize("fmt, key, value, shown", [
    ("qwen3-xpress", "xpress_rank", "wide", "xpress_rank"),
    ("domino", "dflash_config.gru_hidden_dim", 2.5, "dflash_config.gru_hidden_dim"),
    ("lilicorr", "dflash_config.lilicorr_enabled", "yes", "dflash_config.lilicorr_enabled"),
])
def test_family_settings_are_typed_and_a_bad_value_names_its_key(fmt, key, value, shown):
    """The family's own keys are typed fields (DraftSpec.xpress / .lilicorr / .domino), not an untyped
    dict read by string: a value of the wrong type is one ConfigError naming the key as written."""
    from dflash_compat.exceptions import ConfigError

    cfg = json.loads(json.dumps(FAMILY_CONFIGS[fmt]))
    head, _, last = key.rpartition(".")
    (cfg[head] if head else cfg)[last] = value
    with pytest.raises(ConfigError, match=f"`{re.escape(shown)}`"):
        parse_draft_config(cfg, "d")


def test_lilicorr_settings_read():
    d = parse_draft_config(FAMILY_CONFIGS["lilicorr"], "d")
    assert d.lilicorr.num_layers == 2 and d.sources["lilicorr.num_layers"] == "dflash_config.lilicorr_num_layers"
