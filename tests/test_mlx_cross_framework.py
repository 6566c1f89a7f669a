"""The same weights give the same tokens in our PyTorch and MLX runtimes (float32): one transformers
checkpoint read by transformers and by mlx-lm, one z-lab draft read by both draft loaders."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
mx = pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.runtime import mlx_draft, mlx_generate, torch_draft, torch_generate  # noqa: E402

from .tiny_dflash import make_pair  # noqa: E402

PROMPT = [1, 5, 9, 3, 7, 2, 4]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("seed,block_size,vocab", [(0, 4, 32), (1, 8, 16), (2, 6, 64)])
def test_same_tokens_and_acceptance_in_both_runtimes(tmp_path, version, seed, block_size, vocab):
    torch.set_num_threads(1)
    model, _, folder = make_pair(tmp_path, seed=seed, version=version, block_size=block_size,
                                 target={"vocab": vocab}, save_target=True)
    n = 30
    t_out = torch_generate.spec_generate(torch_draft.load_draft(folder), torch_generate.target_for(model), PROMPT,
                                         max_new_tokens=n)
    m_target = mlx_generate.load_target(tmp_path / "target")  # the transformers checkpoint, through mlx-lm
    m_out = mlx_generate.spec_generate(mlx_draft.load_draft(folder), m_target, PROMPT, max_new_tokens=n)
    assert m_out.tokens == t_out.tokens
    assert m_out.tokens == mlx_generate.greedy_generate(m_target, PROMPT, max_new_tokens=n).tokens
    # the drafts compute the same proposals, so the same ones are accepted
    assert m_out.stats.acceptance_lengths == t_out.stats.acceptance_lengths
    assert m_out.stats.accepted == t_out.stats.accepted and m_out.stats.drafted == t_out.stats.drafted


def test_draft_hidden_states_agree(tmp_path):
    """One draft forward on the same inputs: our MLX and PyTorch modules agree to float32 rounding."""
    import numpy as np

    _, tcfg, folder = make_pair(tmp_path, seed=3, version=2, block_size=6)
    td, md = torch_draft.load_draft(folder), mlx_draft.load_draft(folder)
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((1, 6, tcfg["hidden_size"])).astype(np.float32)
    feats = rng.standard_normal((1, 5, 2 * tcfg["hidden_size"])).astype(np.float32)
    with torch.no_grad():
        t_h = td(torch.from_numpy(noise), torch.from_numpy(feats), 5, td.new_cache()).numpy()
    m_h = np.array(md(mx.array(noise), mx.array(feats), 5, md.new_cache()))
    assert np.abs(t_h - m_h).max() < 1e-4
