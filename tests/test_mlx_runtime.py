"""The MLX runtime on tiny mlx-lm targets: greedy output identical to mlx-lm's own greedy decoding and to
the dflash package's MLX stream_generate; rollback of KV, rotating and GatedDeltaNet caches; sampling."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

mx = pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.runtime import mlx_target  # noqa: E402
from dflash_compat.runtime.mlx_target import MLXTarget, cut_rotating  # noqa: E402
from dflash_compat.exceptions import InputError, RuntimeUnsupportedError, WeightsError  # noqa: E402
from dflash_compat.runtime import mlx_generate as rt  # noqa: E402
from dflash_compat.runtime.mlx_draft import load_draft  # noqa: E402
from tests.mlx_models import (  # noqa: E402
    EOS, build_target, draft_config, make_tokenizer, mlx_lm_greedy, random_draft_weights, save_draft,
    target_config,
)

PROMPT = [5, 7, 9, 11, 3, 2, 8, 4, 6]  # longer than the sliding windows (4) of the SWA targets
N = 24


def _pair(tmp_path, name, *, seed=0, bs=4, version=1, layers=1, ids=(0, 2), **draft_kw):
    cfg = target_config(name)
    model = build_target(cfg, seed=seed)
    dcfg = draft_config(cfg, layer_ids=ids, block_size=bs, layers=layers, version=version, **draft_kw)
    folder = save_draft(tmp_path / f"{name}-d{seed}-{bs}-v{version}", dcfg, seed=seed + 10)
    return cfg, model, rt.target_for(model, cfg), folder


@pytest.mark.parametrize("name", ["qwen3", "qwen3_tied", "qwen3_5", "qwen3_next", "llama_swa", "gemma3_text"])
@pytest.mark.parametrize("seed,bs", [(0, 2), (1, 4), (2, 7)])
def test_greedy_equals_mlx_lm_greedy(tmp_path, name, seed, bs):
    cfg, model, target, folder = _pair(tmp_path, name, seed=seed, bs=bs)
    expected = mlx_lm_greedy(model, PROMPT, N)
    out = rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=N)
    assert out.tokens == expected
    assert rt.greedy_generate(target, PROMPT, max_new_tokens=N).tokens == expected
    s = out.stats
    assert s.num_new_tokens == N and 1 + sum(s.acceptance_lengths) == N
    assert all(1 <= a <= bs for a in s.acceptance_lengths)
    assert s.accepted[:-1] == [a - 1 for a in s.acceptance_lengths[:-1]]
    # the last step may be cut to the tokens still wanted: its accepted drafts + the bonus, at most that room
    room = N - 1 - sum(s.acceptance_lengths[:-1])
    assert 0 <= s.accepted[-1] <= s.drafted[-1] and s.acceptance_lengths[-1] == min(s.accepted[-1] + 1, room)


def test_acceptance_above_one_happens(tmp_path):
    # Small vocabularies make a random draft right sometimes: the accept path is exercised.
    lengths = []
    for name in ("qwen3_5", "qwen3_next", "llama_swa"):
        for seed in (0, 1):
            cfg, model, target, folder = _pair(tmp_path, name, seed=seed, bs=4)
            out = rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=N)
            assert out.tokens == mlx_lm_greedy(model, PROMPT, N)
            lengths += out.stats.acceptance_lengths
    assert max(lengths) > 1


def _oracle(model, folder, prompt, n, monkeypatch):
    """The dflash package's MLX stream_generate (its Hub download pointed at the local folder)."""
    from dflash import model_mlx
    from mlx_lm.tokenizer_utils import TokenizerWrapper

    monkeypatch.setattr(model_mlx, "snapshot_download", lambda repo, **kw: repo)
    draft = model_mlx.load_draft(str(folder))
    tokenizer = TokenizerWrapper(make_tokenizer())
    tokenizer.eos_token_ids = []  # no stop token: both runtimes produce n tokens
    tokens, lengths = [], []
    for r in model_mlx.stream_generate(model, draft, tokenizer, mx.array(prompt), max_tokens=n):
        tokens += r.tokens
        if r.accepted:  # None on the prefill's token and on the final "length" response
            lengths.append(r.accepted)
    return tokens, lengths


@pytest.mark.parametrize("name", ["qwen3", "qwen3_5", "llama_swa", "gemma3_text"])
@pytest.mark.parametrize("version", [1, 2])
def test_same_tokens_and_acceptance_as_dflash_mlx(tmp_path, monkeypatch, name, version):
    for seed, bs in ((0, 3), (1, 5)):
        cfg, model, target, folder = _pair(tmp_path, name, seed=seed, bs=bs, version=version, layers=2)
        ours = rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=N)
        # the reference hooks the layer list it is given for good: give it its own copy of the weights
        tokens, lengths = _oracle(build_target(cfg, seed=seed), folder, PROMPT, N, monkeypatch)
        assert ours.tokens == tokens
        # same draft maths: the same proposals are accepted at every step
        assert ours.stats.acceptance_lengths == lengths
        # and the reference itself is exact, also once a sliding window (4 here) has wrapped
        assert tokens == mlx_lm_greedy(model, PROMPT, N)


def test_qwen3_next_runs_where_the_reference_asserts(tmp_path, monkeypatch):
    cfg, model, target, folder = _pair(tmp_path, "qwen3_next", bs=4)
    assert target.rollback_kind == "replay"
    assert rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=N).tokens == mlx_lm_greedy(model, PROMPT, N)
    with pytest.raises(AssertionError, match="non-trimmable cache count"):
        _oracle(build_target(cfg), folder, PROMPT, N, monkeypatch)


def _replay_continuation(monkeypatch, continuation, prompt_len):
    """A stand-in proposer that drafts the target's own greedy continuation (tau == block size)."""
    real = rt.draft_block

    def proposer(draft, target, last, features, start, cache, size, *args, **kw):
        real(draft, target, last, features, start, cache, size, *args, **kw)  # keep the draft cache in step
        k = start - prompt_len  # continuation[k] is the token at `start`
        return mx.array([continuation[k + 1: k + size]]), None

    monkeypatch.setattr(rt, "draft_block", proposer)


@pytest.mark.parametrize("name", ["qwen3", "qwen3_5", "llama_swa"])
def test_replayed_continuation_accepts_whole_blocks(tmp_path, monkeypatch, name):
    bs = 5
    cfg, model, target, folder = _pair(tmp_path, name, bs=bs)
    expected = mlx_lm_greedy(model, PROMPT, N + bs)
    _replay_continuation(monkeypatch, expected, len(PROMPT))
    out = rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=N)
    assert out.tokens == expected[:N]
    assert out.stats.acceptance_lengths[:-1] == [bs] * (len(out.stats.acceptance_lengths) - 1)
    assert out.stats.tau > bs - 1


def _break_kv_trim(monkeypatch):
    real = mlx_target.cut_entry
    monkeypatch.setattr(mlx_target, "cut_entry", lambda entry, n: real(entry, n - 1))  # one rejected token stays


def _break_rotating(monkeypatch):
    # what mlx-lm's trim_prompt_cache() does: trim only while is_trimmable(), i.e. until the window
    # has wrapped -- then the rejected tokens silently stay
    monkeypatch.setattr(mlx_target, "cut_rotating", lambda entry, n: entry.trim(n) if entry.is_trimmable() else 0)


def _break_replay(monkeypatch):
    # keep the recurrent state of the whole verified block, rejected tokens included
    monkeypatch.setattr(MLXTarget, "_replay", lambda self, cache, i, entry, length: None)


@pytest.mark.parametrize("name,breaker", [
    ("qwen3", _break_kv_trim), ("llama_swa", _break_rotating), ("gemma3_text", _break_rotating),
    ("qwen3_5", _break_replay), ("qwen3_next", _break_replay),
])
def test_broken_rollback_is_caught(tmp_path, monkeypatch, name, breaker):
    cfg, model, target, folder = _pair(tmp_path, name, bs=4)
    expected = mlx_lm_greedy(model, PROMPT, N)
    draft = load_draft(folder)
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=N).tokens == expected
    breaker(monkeypatch)
    assert rt.spec_generate(load_draft(folder), rt.target_for(model, cfg), PROMPT, max_new_tokens=N).tokens != expected


def test_rotating_cache_that_lost_entries_is_refused():
    from mlx_lm.models.cache import RotatingKVCache

    c = RotatingKVCache(max_size=4)
    for _ in range(6):  # one token at a time: written in place, the oldest entries overwritten
        c.update_and_fetch(mx.zeros((1, 1, 1, 2)), mx.zeros((1, 1, 1, 2)))
    with pytest.raises(RuntimeUnsupportedError, match="RotatingKVCache"):
        cut_rotating(c, 2)
    c2 = RotatingKVCache(max_size=4)
    c2.update_and_fetch(mx.zeros((1, 1, 9, 2)), mx.zeros((1, 1, 9, 2)))  # one forward of 9: all kept
    cut_rotating(c2, 3)
    assert c2.offset == 6 and c2.keys.shape[2] == 6


def test_recurrent_target_without_replay_is_refused(tmp_path):
    cfg = target_config("lfm2")  # short-conv layers: an ArraysCache that is no GatedDeltaNet
    model = build_target(cfg)
    target = rt.target_for(model, cfg)
    assert target.rollback_kind == "none" and "ArraysCache" in target.rollback_problem
    dcfg = draft_config(cfg, layer_ids=(0,), block_size=4)
    draft = load_draft(save_draft(tmp_path / "d", dcfg))
    with pytest.raises(RuntimeUnsupportedError, match="rejected tokens"):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=8)


def test_stream_generate_steps_and_stop_token(tmp_path):
    cfg, model, target, folder = _pair(tmp_path, "qwen3_5", bs=4)
    draft = load_draft(folder)
    steps = list(rt.stream_generate(draft, target, PROMPT, max_new_tokens=N))
    tokens = [t for s in steps for t in s.tokens]
    assert tokens == mlx_lm_greedy(model, PROMPT, N)
    assert steps[0].drafted == 0 and all(s.drafted >= 1 for s in steps[1:])
    assert [s.finish_reason for s in steps] == [None] * (len(steps) - 1) + ["length"]
    stop = tokens[5]
    first = tokens.index(stop)
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=N, stop_token_ids=[stop])
    assert out.tokens == tokens[: first + 1]
    last = list(rt.stream_generate(draft, target, PROMPT, max_new_tokens=N, stop_token_ids=[stop]))[-1]
    assert last.finish_reason == "stop" and last.tokens[-1] == stop


def test_block_size_and_input_checks(tmp_path):
    cfg, model, target, folder = _pair(tmp_path, "qwen3", bs=4)
    draft = load_draft(folder)
    expected = mlx_lm_greedy(model, PROMPT, 10)
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=10, block_size=1).tokens == expected
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=1).tokens == expected[:1]
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=0).tokens == []
    with pytest.raises(InputError):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, block_size=5)
    with pytest.raises(InputError):
        rt.spec_generate(draft, target, [], max_new_tokens=4)


def test_pairing_mismatches_are_refused(tmp_path):
    cfg, model, target, _ = _pair(tmp_path, "qwen3")
    bad_ids = load_draft(save_draft(tmp_path / "ids", draft_config(cfg, layer_ids=(0, 9))))
    with pytest.raises(RuntimeUnsupportedError, match="out of range"):
        rt.spec_generate(bad_ids, target, PROMPT, max_new_tokens=4)
    dcfg = draft_config(cfg)
    dcfg["dflash_config"]["mask_token_id"] = 99
    with pytest.raises(RuntimeUnsupportedError, match="mask_token_id"):
        rt.spec_generate(load_draft(save_draft(tmp_path / "mask", dcfg)), target, PROMPT, max_new_tokens=4)


def test_weights_are_checked(tmp_path):
    cfg = target_config("qwen3")
    dcfg = draft_config(cfg)
    weights = random_draft_weights(dcfg)
    weights.pop("fc.weight")
    with pytest.raises(WeightsError, match="missing fc.weight"):
        load_draft(save_draft(tmp_path / "missing", dcfg, weights=weights))
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "config.json").write_text((tmp_path / "missing" / "config.json").read_text())
    with pytest.raises(WeightsError, match="no \\*.safetensors"):
        load_draft(tmp_path / "none")


def test_quantized_draft_and_target(tmp_path, monkeypatch):
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    cfg, model, target, folder = _pair(tmp_path, "qwen3", bs=4)
    draft = load_draft(folder)
    nn.quantize(draft, group_size=32, bits=8)
    dcfg = draft_config(cfg, block_size=4, quantization={"group_size": 32, "bits": 8})
    qfolder = save_draft(tmp_path / "q8", dcfg, weights=dict(tree_flatten(draft.parameters())))
    qdraft = load_draft(qfolder, dtype=None)
    assert isinstance(qdraft.fc, nn.QuantizedLinear)
    nn.quantize(model, group_size=32, bits=4)  # a 4-bit target: embedding and head quantised too
    qtarget = rt.target_for(model, cfg)
    assert qtarget.hidden_size == 32 and qtarget.vocab_size == 32
    expected = mlx_lm_greedy(model, PROMPT, N)
    assert rt.spec_generate(qdraft, qtarget, PROMPT, max_new_tokens=N).tokens == expected
    from dflash import model_mlx

    monkeypatch.setattr(model_mlx, "snapshot_download", lambda repo, **kw: repo)
    with pytest.raises(ValueError, match="scales"):  # the reference builds float layers for it
        model_mlx.load_draft(str(qfolder))


# ---- sampling ------------------------------------------------------------------------------


def test_accept_sampling_preserves_the_target_distribution():
    # q (draft) and p (target) over 6 tokens; whatever the draft proposes, the first committed
    # token must be distributed as p[0].
    p = mx.array([[[0.4, 0.3, 0.1, 0.1, 0.05, 0.05], [0.2, 0.2, 0.2, 0.2, 0.1, 0.1]]])
    q = mx.array([[[0.05, 0.05, 0.5, 0.3, 0.05, 0.05]]])
    keys = rt.new_rng(0)
    counts = [0] * 6
    n = 3000
    for _ in range(n):
        tok = mx.random.categorical(mx.log(q[0]), key=keys.next())[None]  # [1, 1] ~ q
        _, new = rt.accept_sampling(tok, q, p, keys)
        counts[new[0]] += 1
    tv = 0.5 * sum(abs(c / n - pi) for c, pi in zip(counts, p[0, 0].tolist()))
    assert tv < 0.05, (counts, tv)


def test_sampling_probs_top_k_top_p():
    logits = mx.array([[2.0, 1.0, 0.5, -1.0]])
    assert (rt.sampling_probs(logits, rt.Sampling(1.0, top_k=2)) > 0).sum().item() == 2
    probs = rt.sampling_probs(logits, rt.Sampling(1.0, top_p=0.5))
    assert (probs > 0).sum().item() == 1 and abs(probs.sum().item() - 1) < 1e-6
    assert abs(rt.sampling_probs(logits, rt.Sampling(0.5)).sum().item() - 1) < 1e-6


@pytest.mark.parametrize("version", [1, 2])
def test_sampled_generation_is_seeded(tmp_path, version):
    cfg, model, target, folder = _pair(tmp_path, "qwen3_5", bs=4, version=version)
    draft = load_draft(folder)
    kw = dict(max_new_tokens=16, sampling=rt.Sampling(1.0, top_p=0.9, seed=3))
    a, b = rt.spec_generate(draft, target, PROMPT, **kw), rt.spec_generate(draft, target, PROMPT, **kw)
    assert a.tokens == b.tokens and len(a.tokens) == 16
    assert all(0 <= t < 32 for t in a.tokens)
    other = rt.spec_generate(draft, target, PROMPT, max_new_tokens=16, sampling=rt.Sampling(1.0, top_p=0.9, seed=4))
    assert other.tokens != a.tokens
    with pytest.raises(InputError):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, sampling=rt.Sampling(-1))


def test_eos_from_config(tmp_path):
    cfg, model, target, _ = _pair(tmp_path, "qwen3")
    assert rt.stop_tokens_of(rt.target_for(model, dict(cfg, eos_token_id=[EOS, 3]))) == [EOS, 3]
    assert rt.stop_tokens_of(target) == []


@pytest.mark.parametrize("name", ["qwen3_5", "llama_swa"])
def test_chunked_prefill_is_exact(tmp_path, name):
    cfg, model, target, folder = _pair(tmp_path, name, bs=4)
    steps = rt.stream_generate(load_draft(folder), target, PROMPT, max_new_tokens=N, prefill_step=4)
    assert [t for s in steps for t in s.tokens] == mlx_lm_greedy(model, PROMPT, N)


# ---------------------------------------------------------------------------------------------
# refusals: broken target checkpoints, bad ids, too many positions, short trims; draft key names
# ---------------------------------------------------------------------------------------------

TINY_TARGET = Path(__file__).resolve().parent.parent / "examples" / "tiny-qwen3" / "target"


def _tiny_copy(tmp_path, **changes):
    folder = tmp_path / "target"
    shutil.copytree(TINY_TARGET, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_target_missing_weights_are_refused(tmp_path):
    folder = _tiny_copy(tmp_path, num_hidden_layers=6, layer_types=["full_attention"] * 6)
    with pytest.raises(WeightsError, match=r"Missing .*model\.layers\.4\."):
        rt.load_target(folder)
    assert rt.load_target(TINY_TARGET).num_layers == 4


def test_truncated_target_weights_are_a_weights_error(tmp_path):
    folder = _tiny_copy(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="cannot load its weights"):
        rt.load_target(folder)
    (folder / "model.safetensors").write_bytes(b"\x00" * 5)
    with pytest.raises(WeightsError):
        rt.load_target(folder)


def test_out_of_vocabulary_ids_are_input_errors(tmp_path):
    cfg, model, target, folder = _pair(tmp_path, "qwen3")
    draft = load_draft(folder)
    for bad, shown in ((PROMPT + [32], "32"), ([-1, 2], "-1"), (mx.array([[3, 2**31 + 5]]), str(2**31 + 5))):
        with pytest.raises(InputError, match=f"token id {shown} is outside the target's vocabulary"):
            rt.spec_generate(draft, target, bad, max_new_tokens=4)
        with pytest.raises(InputError, match="outside the target's vocabulary"):
            rt.greedy_generate(target, bad, max_new_tokens=4)
    with pytest.raises(InputError):
        rt.greedy_generate(target, [1.5, 2.0], max_new_tokens=4)


def test_generation_beyond_max_positions_is_an_input_error(tmp_path, monkeypatch):
    cfg, model, target, folder = _pair(tmp_path, "qwen3")  # max_position_embeddings 512
    draft = load_draft(folder)
    assert target.max_positions == 512
    with pytest.raises(InputError, match="max_position_embeddings 512"):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=10**12)
    with pytest.raises(InputError, match="max_position_embeddings 512"):
        rt.greedy_generate(target, PROMPT, max_new_tokens=512)
    # an unknown limit: the draft cache still allocates only what the run needs
    monkeypatch.setattr(MLXTarget, "max_positions", property(lambda self: None))
    plain = mlx_lm_greedy(model, PROMPT, 12)
    stop = plain[6]
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=10**12, stop_token_ids=[stop])
    assert out.tokens == plain[: plain.index(stop) + 1]


def test_a_trim_that_drops_fewer_positions_is_refused():
    class Short:  # e.g. a ChunkedKVCache asked to trim below its chunk's start
        def trim(self, n):
            return n - 1

    with pytest.raises(RuntimeUnsupportedError, match="could only drop 2 of the 3"):
        mlx_target.cut_entry(Short(), 3)
    from mlx_lm.models.cache import KVCache

    c = KVCache()
    c.update_and_fetch(mx.zeros((1, 1, 5, 2)), mx.zeros((1, 1, 5, 2)))
    mlx_target.cut_entry(c, 2)
    assert c.offset == 3


def test_model_prefix_on_every_draft_key(tmp_path):
    import numpy as np
    from mlx.utils import tree_flatten

    cfg = target_config("qwen3")
    dcfg = draft_config(cfg, version=2)
    weights = random_draft_weights(dcfg, seed=3)
    plain = load_draft(save_draft(tmp_path / "plain", dcfg, weights=weights))
    renamed = {"model." + k: v for k, v in weights.items()}
    other = load_draft(save_draft(tmp_path / "renamed", dcfg, weights=renamed))
    theirs = dict(tree_flatten(other.parameters()))
    for name, a in tree_flatten(plain.parameters()):
        assert np.array_equal(np.array(a), np.array(theirs[name])), name

