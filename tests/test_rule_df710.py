"""DF710: an embedding / head narrower than the decoder (OPT-350m's project_in / project_out) is caught from the
module tree, and the built-in OPT adapter makes it go away."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from tests.configs import write_model

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _opt(proj: int) -> dict:
    return {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 32, "word_embed_proj_dim": proj,
            "num_hidden_layers": 2, "ffn_dim": 64, "num_attention_heads": 4, "vocab_size": 64,
            "max_position_embeddings": 128, "do_layer_norm_before": proj == 32, "eos_token_id": 2}


def _draft() -> dict:
    return {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 64,
            "vocab_size": 64, "rms_norm_eps": 1e-6, "max_position_embeddings": 128, "num_target_layers": 2,
            "hidden_act": "silu", "rope_theta": 10000.0,
            "dflash_config": {"mask_token_id": 63, "target_layer_ids": [0], "block_size": 4}}


def _codes(tmp_path, proj: int, *extra: str) -> list[str]:
    t = write_model(tmp_path / f"t{proj}", _opt(proj))
    d = write_model(tmp_path / "d", _draft())
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "-f", "json", *extra], catch_exceptions=False)
    return [f["code"] for f in json.loads(res.output)["findings"]]


def test_catches_projected_embedding(tmp_path):
    assert "DF710" in _codes(tmp_path, 16)


def test_passes_plain_opt(tmp_path):
    assert "DF710" not in _codes(tmp_path, 32)


def test_opt_adapter_fixes_it(tmp_path):
    assert "DF710" not in _codes(tmp_path, 16, "--adapter", "opt")
