"""Weight headers per draft family: the published DFlash 2 and Muse-Glimmer assistant headers, rebuilt as
sparse files (no tensor data stored), read with the right facts and no false DF6xx findings; every
family's own tensors are known (aliases, heads, vocabulary maps) and their absence or shape is caught."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from dflash_compat.checker import RuleContext, run_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.rules import ALL_RULES
from dflash_compat.specs import parse_target_config
from tests.deep_helpers import draft_tensors, findings, read_draft, write_draft

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "families"
WEIGHT_CODES = {f"DF6{i:02d}" for i in range(1, 11)}


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def write_published(folder: Path, family: str) -> Path:
    """config.json + model.safetensors whose header is the published one, verbatim; the data section is a
    sparse hole of the declared size (`truncate`), so nothing large is written to disk."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text((FIXTURES / f"{family}-config.json").read_text())
    header = fixture(f"{family}-safetensors-header.json")
    end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
    blob = json.dumps(header, separators=(",", ":")).encode()
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(blob)) + blob)
        fh.truncate(8 + len(blob) + end)
    return folder


def all_findings(target_cfg: dict, d, w) -> list:
    ctx = RuleContext(target=parse_target_config(target_cfg, "target"), draft=d, options=CheckOptions(), weights=w)
    return run_rules(ctx, ALL_RULES, ("transformers", "vllm", "sglang", "mlx"))


MUSE_TARGET = fixture("muse-glimmer-target-config.json")
# The only findings the real pairs may get, each true (or another helper's open rule), none about the weights.
# No DF301: vLLM registers both drafts (registry.py:664-696), the assistant under its own name. No DF302 /
# DF402: both engines serve the Muse Glimmer target (vLLM registry.py:555, SGLang muse_glimmer.py:1041).
EXPECTED = {
    "assistant": {
        "DF009",  # MLX cannot load the family; SGLang runs its sliding layers causally (see test_df009)
        "DF501",  # MLX: the dflash MLX loader needs vocab_size / num_target_layers / nested ids (true)
        "DF202",  # transformers: the target's sliding-window cache needs past recording (target fact)
        "DF504",  # MLX: mlx-lm builds RotatingKVCache for the target's sliding layers (muse_glimmer.py:273-281)
        "DF312",  # info: no --num-speculative-tokens given, which vLLM needs
    },
    # DF310: vLLM serves DFlash 2 with its V2 runner only (info); DF009: a z-lab draft is the dflash reference's
    # format, not transformers' native generate's (info)
    "dflash2": {"DF202", "DF504", "DF312", "DF310", "DF009"},
}


@pytest.mark.parametrize("family, fmt", [("assistant", "muse-glimmer-assistant"), ("dflash2", "zlab-v2")])
def test_published_headers_read_with_the_right_facts_and_no_weight_findings(tmp_path, family, fmt):
    d, w = read_draft(write_published(tmp_path / family, family))
    assert os.stat(tmp_path / family / "model.safetensors").st_blocks * 512 < 1 << 20  # sparse: < 1 MiB on disk
    assert d.format == fmt
    assert (d.block_size, d.mask_token_id, d.target_layer_ids) == (16, 201818, [1, 13, 25, 37, 49])
    assert w.tensor_count == (58 if family == "assistant" else 81)
    assert w.incomplete == {}
    got = all_findings(MUSE_TARGET, d, w)
    assert not [f for f in got if f.code in WEIGHT_CODES], [f.message for f in got if f.code in WEIGHT_CODES]
    unexplained = {f.code for f in got} - EXPECTED[family]
    assert not unexplained, [f.message for f in got if f.code in unexplained]


def test_assistant_encoder_names_locate_the_files_own_spelling(tmp_path):
    cfg = dict(fixture("assistant-config.json"), target_layer_ids=[1, 13, 25, 37])  # fc is for 5 layers
    folder = write_published(tmp_path / "a", "assistant")
    (folder / "config.json").write_text(json.dumps(cfg))
    (f,) = findings("DF601", parse_target_config(MUSE_TARGET, "t"), *read_draft(folder))
    assert f.locations[0].key == "encoder.fc.weight"


def test_a_truncated_published_header_is_df610(tmp_path):
    folder = write_published(tmp_path / "a", "assistant")
    os.truncate(folder / "model.safetensors", os.stat(folder / "model.safetensors").st_size - 1)
    assert [f.code for f in findings("DF610", parse_target_config(MUSE_TARGET, "t"), *read_draft(folder))] == ["DF610"]


# --- tiny drafts of each family, written with garbage data ------------------------------------------

TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
          "vocab_size": 1000, "rms_norm_eps": 1e-6}
BASE = {
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000,
    "rms_norm_eps": 1e-6, "max_position_embeddings": 4096, "hidden_act": "silu", "block_size": 8,
    "num_target_layers": 4, "dflash_config": {"mask_token_id": 999, "target_layer_ids": [1, 2]},
}


def _weight_codes(folder: Path) -> set[str]:
    return {f.code for f in all_findings(TARGET, *read_draft(folder)) if f.code in WEIGHT_CODES}


def _xpress(rank=8, mlp=16, vocab=1000, h=64):
    p = "xpress_head."
    return {p + "w1.weight": [vocab, rank], p + "down_h.weight": [rank, h], p + "down_g.weight": [rank, h],
            p + "in_proj.weight": [rank, 3 * rank], p + "mix.L": [rank, 8, 8], p + "mlp.gate_proj.weight": [mlp, rank],
            p + "mlp.up_proj.weight": [mlp, rank], p + "mlp.down_proj.weight": [rank, mlp], p + "w2.weight": [vocab, rank]}


def _domino(g=32, e=48, vocab=1000, h=64):
    return {"prefix_gru.weight_ih_l0": [3 * g, h], "prefix_gru.weight_hh_l0": [3 * g, g],
            "embed_proj.0.weight": [e, h + g], "embed_proj.2.weight": [vocab, e]}


def _with(cfg: dict, extra_shapes: dict, drop: tuple = ()) -> dict:
    tensors = {k: v for k, v in draft_tensors(cfg).items() if k not in drop}
    tensors.update({k: ("BF16", s) for k, s in extra_shapes.items()})
    return tensors


XPRESS = dict(BASE, architectures=["Qwen3XPressModel"], xpress_rank=8, xpress_mlp_hidden=16, xpress_block_size=8)
DOMINO = dict(BASE, dflash_config=dict(BASE["dflash_config"], projector_type="domino", gru_hidden_dim=32, emb_dim=48,
                                       shift_label=True, pure_draft_prefix_len=1))
LILICORR = dict(BASE, architectures=["LiLiCorrDraftModel"])


@pytest.mark.parametrize("cfg, extra", [
    (XPRESS, _xpress()),
    (DOMINO, _domino()),
    (LILICORR, {"lilicorr.layers.0.attn.in_proj_weight": [192, 64], "lilicorr.slot_embedding": [1, 1, 7, 1, 64]}),
    (BASE, {"d2t": [1000], "t2d": [1000], "mask_embedding": [64]}),
])
def test_family_heads_and_companions_are_known(tmp_path, cfg, extra):
    assert _weight_codes(write_draft(tmp_path, cfg, _with(cfg, extra))) == set()


@pytest.mark.parametrize("cfg, extra, drop, code", [
    (XPRESS, {k: v for k, v in _xpress().items() if k != "xpress_head.mix.L"}, (), "DF603"),
    (XPRESS, dict(_xpress(), **{"xpress_head.w1.weight": [1000, 16]}), (), "DF604"),
    (DOMINO, {k: v for k, v in _domino().items() if not k.startswith("embed_proj.2")}, (), "DF603"),
    (DOMINO, dict(_domino(), **{"prefix_gru.weight_hh_l0": [96, 16]}), (), "DF604"),
    (BASE, _xpress(), (), "DF609"),  # a refiner head on a plain v1 draft is read by no v1 loader
    (BASE, _domino(), (), "DF609"),
])
def test_family_head_problems_are_caught(tmp_path, cfg, extra, drop, code):
    assert code in _weight_codes(write_draft(tmp_path, cfg, _with(cfg, extra, drop)))


def test_midlayer_alias_of_a_one_layer_draft_is_layer_zero(tmp_path):
    cfg = dict(BASE, num_hidden_layers=1)
    tensors = {k.replace("layers.0.", "midlayer."): v for k, v in draft_tensors(cfg).items()}
    assert _weight_codes(write_draft(tmp_path, cfg, tensors)) == set()


def test_speculators_reduced_vocabulary_head_and_maps_are_not_flagged(tmp_path):
    cfg = {
        "speculators_model_type": "dflash", "architectures": ["DFlashSpeculator"], "aux_hidden_state_layer_ids": [2, 3],
        "mask_token_id": 999, "block_size": 8, "draft_vocab_size": 500,
        "transformer_layer_config": {k: BASE[k] for k in ("model_type", "hidden_size", "num_hidden_layers",
                                     "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
                                     "vocab_size", "rms_norm_eps")},
        "speculators_config": {"proposal_methods": [{"speculative_tokens": 7}], "verifier": {"name_or_path": None}},
    }
    tensors = _with(BASE, {"lm_head.weight": [500, 64], "d2t": [500], "t2d": [1000]})
    folder = write_draft(tmp_path, BASE, tensors)
    (folder / "config.json").write_text(json.dumps(cfg))
    assert _weight_codes(folder) == set()


def test_a_speculators_draft_missing_a_layer_tensor_is_now_checked(tmp_path):
    cfg = {
        "speculators_model_type": "dflash", "aux_hidden_state_layer_ids": [2, 3], "mask_token_id": 999,
        "block_size": 8, "transformer_layer_config": {k: BASE[k] for k in (
            "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "intermediate_size", "vocab_size", "rms_norm_eps")},
        "speculators_config": {"proposal_methods": [{"speculative_tokens": 7}], "verifier": {"name_or_path": None}},
    }
    folder = write_draft(tmp_path, BASE, _with(BASE, {}, drop=("layers.1.self_attn.q_norm.weight",)))
    (folder / "config.json").write_text(json.dumps(cfg))
    assert "DF603" in _weight_codes(folder)


def test_unmodelled_families_get_no_tensor_verdicts(tmp_path):
    laguna = dict(BASE, architectures=["DFlashLagunaForCausalLM"])
    tensors = _with(laguna, {"layers.0.mlp.experts.0.w1.weight": [8, 64]}, drop=("fc.weight",))
    assert _weight_codes(write_draft(tmp_path, laguna, tensors)) == set()
