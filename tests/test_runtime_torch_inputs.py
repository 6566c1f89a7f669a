"""The PyTorch runtime refuses what would otherwise run wrong or crash: broken target checkpoints,
mismatched draft/target dtypes, out-of-vocabulary ids, generations beyond the target's positions;
the greedy baseline needs no rollback; DFlash 2 selectors wider than the vocabulary."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.exceptions import InputError, RuntimeUnsupportedError, WeightsError  # noqa: E402
from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.torch_draft import load_draft  # noqa: E402
from dflash_compat.runtime.torch_target import TorchTarget  # noqa: E402

from .tiny_dflash import make_pair, tiny_target  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "examples" / "tiny-qwen3"
PROMPT = [1, 5, 9, 3, 7, 2, 4]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _target_copy(tmp_path: Path, **changes) -> Path:
    folder = tmp_path / "target"
    shutil.copytree(TINY / "target", folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_target_missing_weights_are_refused(tmp_path):
    folder = _target_copy(tmp_path, num_hidden_layers=6, layer_types=["full_attention"] * 6)
    with pytest.raises(WeightsError, match=r"missing model\.layers\.4\."):
        rt.load_target(folder)


def test_target_config_transformers_refuses_is_a_config_error(tmp_path):
    from dflash_compat.exceptions import ConfigError

    with pytest.raises(ConfigError, match="refuses its config.json"):
        rt.load_target(_target_copy(tmp_path, num_hidden_layers=6))  # 4 layer_types for 6 layers


def test_target_mismatched_weights_are_refused(tmp_path):
    with pytest.raises(WeightsError, match="size mismatch"):
        rt.load_target(_target_copy(tmp_path, intermediate_size=48))


def test_tied_head_is_not_reported_missing(tmp_path):
    tiny_target(0, tie_word_embeddings=True).save_pretrained(str(tmp_path / "tied"), safe_serialization=True)
    target = rt.load_target(tmp_path / "tied")
    assert target.vocab_size == 64
    assert rt.load_target(TINY / "target").num_layers == 4


def test_truncated_target_weights_are_a_weights_error(tmp_path):
    folder = _target_copy(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="cannot load its weights"):
        rt.load_target(folder)
    (folder / "model.safetensors").write_bytes(b"\x00" * 5)
    with pytest.raises(WeightsError):
        rt.load_target(folder)


def test_draft_and_target_dtypes_must_match(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=1, block_size=4, target={"vocab": 16})
    target = rt.target_for(model)  # float32
    draft = load_draft(folder, dtype=torch.bfloat16)
    with pytest.raises(RuntimeUnsupportedError, match="draft is bfloat16 on cpu, the target's embedding float32"):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=4)


def test_out_of_vocabulary_ids_are_input_errors(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=2, block_size=4, target={"vocab": 16})
    target, draft = rt.target_for(model), load_draft(folder)
    for bad, shown in ((PROMPT + [16], "16"), ([-1, 2], "-1"), (torch.tensor([[3, 99]]), "99")):
        with pytest.raises(InputError, match=f"token id {shown} is outside the target's vocabulary"):
            rt.spec_generate(draft, target, bad, max_new_tokens=4)
        with pytest.raises(InputError, match="outside the target's vocabulary"):
            rt.greedy_generate(target, bad, max_new_tokens=4)
    with pytest.raises(InputError):
        rt.greedy_generate(target, [1.5, 2.0], max_new_tokens=4)


def test_generation_beyond_max_positions_is_an_input_error(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=3, block_size=4, target={"vocab": 16})  # 8192 positions
    target, draft = rt.target_for(model), load_draft(folder)
    assert target.max_positions == 8192
    with pytest.raises(InputError, match="max_position_embeddings 8192"):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=10**12)
    with pytest.raises(InputError, match="max_position_embeddings"):
        rt.greedy_generate(target, PROMPT, max_new_tokens=8192 - len(PROMPT) + 1)
    assert len(rt.greedy_generate(target, PROMPT, max_new_tokens=3).tokens) == 3


def test_huge_max_new_tokens_allocates_only_what_it_needs(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=4, block_size=4, target={"vocab": 16})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=12).tokens
    stop = plain[6]
    expected = plain[: plain.index(stop) + 1]
    monkeypatch.setattr(TorchTarget, "max_positions", property(lambda self: None))  # unknown limit
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=10**12, stop_token_ids=[stop])
    assert out.tokens == expected


def test_greedy_baseline_never_rolls_back(tmp_path, monkeypatch):
    from transformers import DynamicCache

    model, _, _ = make_pair(tmp_path, seed=5, block_size=4, target={"vocab": 16})
    target = rt.target_for(model)
    expected = rt.greedy_generate(target, PROMPT, max_new_tokens=10).tokens
    ids = torch.tensor([PROMPT])
    assert expected == model.generate(ids, max_new_tokens=10, do_sample=False)[0, len(PROMPT):].tolist()

    def refuse(*args, **kwargs):
        raise AssertionError("the greedy baseline must not roll back")

    monkeypatch.setattr(TorchTarget, "rollback", refuse)
    monkeypatch.setattr(DynamicCache, "crop", refuse)
    assert rt.greedy_generate(target, PROMPT, max_new_tokens=10).tokens == expected


def test_greedy_baseline_runs_on_a_sliding_window_target(tmp_path):
    extra = {"layer_types": ["sliding_attention", "full_attention"] * 2, "sliding_window": 3, "use_sliding_window": True}
    model = tiny_target(6, vocab=16, **extra)
    target = rt.target_for(model)
    ids = torch.tensor([PROMPT])
    expected = model.generate(ids, max_new_tokens=12, do_sample=False)[0, len(PROMPT):].tolist()
    assert rt.greedy_generate(target, PROMPT, max_new_tokens=12).tokens == expected


def test_selector_top_k_wider_than_the_vocabulary(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=7, version=2, block_size=4, target={"vocab": 16},
                                 draft={"dflash_extra": {"selector_top_k": 40}})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=10).tokens
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=10).tokens == plain
    sampled = rt.spec_generate(draft, target, PROMPT, max_new_tokens=10, sampling=rt.Sampling(0.8, seed=1))
    assert len(sampled.tokens) == 10
