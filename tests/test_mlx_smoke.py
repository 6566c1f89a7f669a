"""`dflash-check smoke --backend mlx` end to end on a tiny mlx-lm target saved to disk."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from click.testing import CliRunner  # noqa: E402

from dflash_compat.cli.app import cli  # noqa: E402
from tests.mlx_models import (  # noqa: E402
    build_target, draft_config, mlx_lm_greedy, save_draft, save_target, save_tokenizer, target_config,
)


@pytest.fixture()
def pair(tmp_path):
    cfg = target_config("qwen3")
    model = build_target(cfg, seed=1)
    target = save_target(tmp_path / "target", model, cfg)
    save_tokenizer(target)
    draft = save_draft(tmp_path / "draft", draft_config(cfg, block_size=4), seed=5)
    return model, target, draft


def test_json_report(pair):
    model, target, draft = pair
    args = [str(target), "--draft", str(draft), "--backend", "mlx", "--prompt-ids", "5,7,9,11,3",
            "--prompt", "t4 t8 t15", "--max-new-tokens", "12", "--format", "json"]
    result = CliRunner().invoke(cli, ["smoke"] + args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["backend"] == "mlx" and report["device"] == "cpu" and report["dtype"] == "float32"
    assert report["block_size"] == 4 and report["summary"]["lossless"] is True
    by_prompt = {tuple(r["prompt_tokens"]): r for r in report["results"]}
    assert set(by_prompt) == {(5, 7, 9, 11, 3), (4, 8, 15)}
    for prompt, r in by_prompt.items():
        assert r["output_tokens"] == r["baseline_tokens"] == mlx_lm_greedy(model, list(prompt), 12)
        assert 1 + sum(r["acceptance_lengths"]) == 12
    assert sum(report["summary"]["histogram"].values()) == sum(len(r["acceptance_lengths"]) for r in report["results"])


def test_text_report_and_sampling(pair):
    _, target, draft = pair
    args = [str(target), "--draft", str(draft), "--backend", "mlx", "--prompt-ids", "5,7,9", "--max-new-tokens", "8"]
    result = CliRunner().invoke(cli, ["smoke"] + args)
    assert result.exit_code == 0, result.output
    assert "backend mlx" in result.output and "lossless" in result.output
    sampled = CliRunner().invoke(cli, ["smoke"] + args + ["--temperature", "0.8", "--format", "json"])
    assert sampled.exit_code == 0 and json.loads(sampled.output)["summary"]["lossless"] is None


def test_input_errors(pair, tmp_path):
    _, target, draft = pair
    base = [str(target), "--draft", str(draft), "--backend", "mlx"]
    out = CliRunner().invoke(cli, ["smoke"] + base + ["--prompt-ids", "5,99"])
    assert out.exit_code == 2 and "outside the target's vocabulary" in out.output
    out = CliRunner().invoke(cli, ["smoke"] + base + ["--prompt-ids", "5", "--block-size", "9"])
    assert out.exit_code == 2 and "--block-size 9" in out.output
    out = CliRunner().invoke(cli, ["smoke"] + base + ["--prompt-ids", "5", "--device", "cuda"])
    assert out.exit_code == 2 and "--backend torch" in out.output


def test_unrollbackable_target_is_refused(tmp_path):
    cfg = target_config("lfm2")
    target = save_target(tmp_path / "t", build_target(cfg), cfg)
    draft = save_draft(tmp_path / "d", draft_config(cfg, layer_ids=(0, 1), block_size=4))
    out = CliRunner().invoke(cli, ["smoke"] + [str(target), "--draft", str(draft), "--backend", "mlx", "--prompt-ids", "5,6"])
    # the checker's config rule refuses it before any load, with the check's finding
    assert out.exit_code == 2 and "DF504 mlx-target-cache-unsupported" in out.stderr and "Traceback" not in out.output
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize("breakage,message", [("layers", "weights do not match"), ("truncate", "cannot load its weights")])
def test_broken_target_checkpoint_exits_2_in_one_line(pair, breakage, message):
    _, target, draft = pair
    if breakage == "layers":
        cfg = json.loads((target / "config.json").read_text())
        cfg["num_hidden_layers"] += 2
        (target / "config.json").write_text(json.dumps(cfg))
    else:
        data = (target / "model.safetensors").read_bytes()
        (target / "model.safetensors").write_bytes(data[: len(data) // 2])
    out = CliRunner().invoke(cli, ["smoke"] + [str(target), "--draft", str(draft), "--backend", "mlx", "--prompt-ids", "5,6"])
    assert out.exit_code == 2, out.output
    assert message in out.stderr and out.stderr.count("\n") == 1 and out.stderr.startswith("dflash-check: error: ")


def test_too_many_new_tokens_and_empty_id_exit_2(pair):
    _, target, draft = pair
    base = [str(target), "--draft", str(draft), "--backend", "mlx"]
    out = CliRunner().invoke(cli, ["smoke"] + base + ["--prompt-ids", "5,6", "--max-new-tokens", "100000000"])
    assert out.exit_code == 2 and "max_position_embeddings 512" in out.stderr and out.stderr.count("\n") == 1
    out = CliRunner().invoke(cli, ["smoke"] + base + ["--prompt-ids", "5,,6"])
    assert out.exit_code == 2 and "comma-separated" in out.stderr


def test_transformers_saved_gpt2_target_is_one_line_naming_why(tmp_path):
    """transformers 5 writes no `n_ctx`, which mlx-lm's gpt2 ModelArgs requires: exit 2, one line, no traceback."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from dflash_compat.runtime.tiny_pair import draft_config as zlab_draft_config
    from dflash_compat.runtime.tiny_pair import draft_state
    from dflash_compat.runtime.tiny_pair import save_draft as save_zlab_draft

    config = transformers.GPT2Config(n_embd=32, n_layer=4, n_head=2, vocab_size=64, n_positions=128,
                                     bos_token_id=None, eos_token_id=None)
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(str(tmp_path / "target"), safe_serialization=True)
    assert "n_ctx" not in json.loads((tmp_path / "target" / "config.json").read_text())
    sizes = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=8, max_position_embeddings=128, rms_norm_eps=1e-6, rope_theta=10000.0, hidden_act="silu",
                 num_hidden_layers=4)
    dcfg = zlab_draft_config(sizes, block_size=4)
    draft = save_zlab_draft(tmp_path / "draft", dcfg, draft_state(dcfg, 3))
    out = CliRunner().invoke(cli, ["smoke"] + [str(tmp_path / "target"), "--draft", str(draft), "--backend", "mlx",
                                         "--prompt-ids", "1,2,3"])
    assert out.exit_code == 2, out.output
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("dflash-check: error: ") and "Traceback" not in out.output
    assert "n_ctx" in out.stderr and "DF510" in out.stderr and "--backend torch" in out.stderr
