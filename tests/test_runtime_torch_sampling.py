"""Speculative rejection sampling preserves the target's sampling distribution (statistical tests on a tiny vocabulary)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.torch_draft import load_draft  # noqa: E402

from .tiny_dflash import make_pair  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def chi_square_p(counts: Counter, probs: dict, n: int) -> float:
    """p-value of Pearson's chi-square test of `counts` (n draws) against `probs`; cells expected
    under 5 are pooled. The chi-square tail is the Wilson-Hilferty normal approximation."""
    stat, pooled_obs, pooled_exp, cells = 0.0, 0, 0.0, 0
    for key, p in probs.items():
        exp, obs = p * n, counts.get(key, 0)
        if exp < 5:
            pooled_obs, pooled_exp = pooled_obs + obs, pooled_exp + exp
        else:
            stat, cells = stat + (obs - exp) ** 2 / exp, cells + 1
    unexpected = sum(v for k, v in counts.items() if probs.get(k, 0) == 0)
    if unexpected:
        return 0.0  # an outcome the target can never produce
    if pooled_exp > 0:
        stat, cells = stat + (pooled_obs - pooled_exp) ** 2 / pooled_exp, cells + 1
    k = max(cells - 1, 1)
    z = ((stat / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _tables(seed: int, rows: int, vocab: int, zero_q: bool):
    gen = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(1, rows + 1, vocab, generator=gen) * 1.5, -1)
    q = torch.softmax(torch.randn(1, rows, vocab, generator=gen) * 1.5, -1)
    if zero_q:  # a top-k draft: tokens the target likes but the draft never proposes
        q[..., :2] = 0
        q = q / q.sum(-1, keepdim=True)
    return p, q


@pytest.mark.parametrize("zero_q", [False, True])
def test_accept_sampling_preserves_each_position(zero_q):
    vocab, g, n = 6, 3, 12000
    p, q = _tables(1, g, vocab, zero_q)
    gen = torch.Generator().manual_seed(7)
    by_pos = [Counter() for _ in range(g + 1)]
    first_accepted = 0
    for _ in range(n):
        d = torch.multinomial(q[0], 1, generator=gen).T  # [1, g]: one draft token per position
        accepted, new = rt.accept_sampling(d, q, p, gen)
        assert new[:accepted] == d[0, :accepted].tolist() and len(new) == accepted + 1
        first_accepted += accepted > 0
        for k, tok in enumerate(new):
            by_pos[k][tok] += 1
    for k in range(g + 1):  # the k-th new token, whenever this step produced it, is distributed as p[k]
        total = sum(by_pos[k].values())
        assert total > 500
        assert chi_square_p(by_pos[k], dict(enumerate(p[0, k].tolist())), total) > 1e-3, k
    # the first draft token is accepted with probability sum(min(p, q))
    expect = torch.minimum(p[0, 0], q[0, 0]).sum().item()
    assert abs(first_accepted / n - expect) < 4 * math.sqrt(expect * (1 - expect) / n)


def _always_accept(d, q, p, gen):  # no rejection step: the draft's tokens always win
    return d.shape[1], d[0].tolist() + [int(torch.multinomial(p[0, -1], 1, generator=gen))]


def _resample_from_p(d, q, p, gen):  # rejection, but the replacement drawn from p instead of the residual
    g = d.shape[1]
    rows = torch.arange(g)
    n = int((torch.rand(g, generator=gen) * q[0, rows, d[0]] < p[0, rows, d[0]]).int().cumprod(0).sum())
    return n, d[0, :n].tolist() + [int(torch.multinomial(p[0, n], 1, generator=gen))]


@pytest.mark.parametrize("wrong", [_always_accept, _resample_from_p])
def test_the_test_catches_a_wrong_sampler(wrong):
    vocab, g, n = 6, 1, 4000
    p, q = _tables(1, g, vocab, False)
    gen = torch.Generator().manual_seed(3)
    first = Counter()
    for _ in range(n):
        d = torch.multinomial(q[0], 1, generator=gen).T
        first[wrong(d, q, p, gen)[1][0]] += 1
    assert chi_square_p(first, dict(enumerate(p[0, 0].tolist())), n) < 1e-6


def _exact_joint(model, prompt, length, temperature, top_p, top_k):
    """The target's own sampling distribution of the first `length` new tokens, by enumeration."""
    vocab = model.config.vocab_size
    joint = {}
    with torch.no_grad():
        def dist(prefix):
            logits = model(torch.tensor([prompt + list(prefix)])).logits[0, -1]
            return rt.sampling_probs(logits, rt.Sampling(temperature, top_p, top_k)).tolist()

        cond = {(): dist(())}
        for n in range(1, length):
            for prefix in itertools.product(range(vocab), repeat=n):
                cond[prefix] = dist(prefix)
    for seq in itertools.product(range(vocab), repeat=length):
        joint[seq] = math.prod(cond[seq[:i]][t] for i, t in enumerate(seq))
    return joint


@pytest.mark.parametrize(
    "version,block_size,temperature,top_p,top_k,runs",
    [(1, 3, 1.0, 1.0, 3, 1500), (2, 2, 0.8, 0.9, 0, 1200)],
)
def test_spec_generate_samples_like_the_target(tmp_path, version, block_size, temperature, top_p, top_k, runs):
    model, _, folder = make_pair(
        tmp_path, seed=2, version=version, block_size=block_size, target={"vocab": 4, "layers": 2},
        draft={"layers": 1, "target_layer_ids": (0,), **({"dflash_extra": {"selector_top_k": 3}} if version == 2 else {})},
    )
    target, draft = rt.target_for(model), load_draft(folder)
    prompt = [1, 2, 0]
    exact = _exact_joint(model, prompt, 3, temperature, top_p, top_k)
    seen, accepted_any = Counter(), 0
    for seed in range(runs):
        out = rt.spec_generate(draft, target, prompt, max_new_tokens=3,
                               sampling=rt.Sampling(temperature, top_p, top_k, seed))
        seen[tuple(out.tokens)] += 1
        accepted_any += out.stats.accepted[0] > 0
    assert 0.1 * runs < accepted_any < 0.9 * runs  # both the accept and the reject paths ran
    assert chi_square_p(seen, exact, runs) > 1e-3
    again = rt.spec_generate(draft, target, prompt, max_new_tokens=3, sampling=rt.Sampling(temperature, seed=5))
    assert again.tokens == rt.spec_generate(draft, target, prompt, max_new_tokens=3,
                                            sampling=rt.Sampling(temperature, seed=5)).tokens
