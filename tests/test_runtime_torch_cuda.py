"""The PyTorch runtime on a CUDA GPU (skipped without one; benchmarks/cuda_smoke.sh runs it on a GPU machine)."""

from __future__ import annotations

import json
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.torch_draft import load_draft  # noqa: E402

from .tiny_dflash import draft_config, draft_state, make_pair, save_draft, save_tokenizer, target_config, tiny_target  # noqa: E402

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated:FutureWarning"),
]
PROMPT = [1, 5, 9, 3, 7, 2, 4]


@pytest.mark.parametrize("version", [1, 2])
def test_cuda_float32_matches_reference_and_greedy(tmp_path, version):
    import dflash.model as ref

    model, _, folder = make_pair(tmp_path, seed=1, version=version, block_size=8, target={"vocab": 32})
    model = model.to("cuda")
    target = rt.target_for(model)
    draft = load_draft(folder, device="cuda", dtype=torch.float32)
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=40)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=40)
    assert out.tokens == plain.tokens
    cls = ref.DFlash2DraftModel if version == 2 else ref.DFlashDraftModel
    theirs = cls.from_pretrained(str(folder), dtype=torch.float32).to("cuda").eval()
    ids = torch.tensor([PROMPT], device="cuda")
    want = ref.dflash_generate(theirs, model, ids, 40, None)[0, len(PROMPT):].tolist()
    assert out.tokens == want
    assert out.stats.prefill_s > 0 and out.stats.decode_s > 0


def test_cuda_bfloat16_runs(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=2, block_size=8, target={"vocab": 32})
    target = rt.target_for(model.to("cuda", torch.bfloat16))
    draft = load_draft(folder, device="cuda", dtype=torch.bfloat16)
    assert draft.fc.weight.dtype == torch.bfloat16 and target.dtype == torch.bfloat16
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=33, timed=False)
    assert len(out.tokens) == 33 and out.stats.decode_s > 0
    sampled = rt.spec_generate(draft, target, PROMPT, max_new_tokens=33, sampling=rt.Sampling(0.8, 0.9, seed=0))
    assert len(sampled.tokens) == 33
    # (bf16 block verification can differ from one-by-one decoding at near-ties: no token-for-token check)


def test_cuda_replay_gives_tau_equal_block_size(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=3, block_size=8, target={"vocab": 32})
    target = rt.target_for(model.to("cuda"))
    draft = load_draft(folder, device="cuda")
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=41).tokens

    def replay(draft, target, last, features, start, cache, size, *a, **k):
        done = start - len(PROMPT) + 1
        return torch.tensor([plain[done: done + size - 1]], device=last.device), None

    monkeypatch.setattr(rt, "draft_block", replay)
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=33)
    assert out.tokens == plain[:33] and out.stats.acceptance_lengths == [8] * 4


def test_cuda_smoke_command(tmp_path):
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    tcfg = target_config(vocab=16)
    tiny_target(3, vocab=16).save_pretrained(str(tmp_path / "target"), safe_serialization=True)
    save_tokenizer(tmp_path / "target", 16)
    dcfg = draft_config(tcfg, block_size=4, mask_token_id=15)
    save_draft(tmp_path / "draft", dcfg, draft_state(dcfg, 4))
    args = ["smoke", str(tmp_path / "target"), "--draft", str(tmp_path / "draft"), "--prompt", "w1 w2 w3",
            "--max-new-tokens", "16", "--device", "cuda", "--dtype", "float32", "-f", "json"]
    t = time.perf_counter()
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["device"] == "cuda" and payload["dtype"] == "float32" and payload["summary"]["lossless"] is True
    assert time.perf_counter() - t < 120
    res = CliRunner().invoke(cli, args[:-6] + ["--device", "auto", "-f", "json"])
    assert json.loads(res.stdout)["dtype"] == "bfloat16"
