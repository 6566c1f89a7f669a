"""The runtime core (pure Python) and the one public API both runtimes share.

The API test reads the two runtime modules' source (ast), so it runs without torch or mlx."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from dflash_compat.exceptions import InputError, RuntimeUnsupportedError
from dflash_compat.runtime import core
from dflash_compat.runtime.core import Sampling

RUNTIME = Path(__file__).resolve().parent.parent / "dflash_compat" / "runtime"
# Same names, same parameters. Loading differs by framework (torch has devices, mlx-lm configs).
FRAMEWORK_SPECIFIC = {"load_target", "load_draft", "target_for"}


def _api(name: str) -> tuple[list[str], dict[str, list[tuple[str, str]]]]:
    tree = ast.parse((RUNTIME / f"{name}.py").read_text())
    names = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "__all__")
    defs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            defs[node.name] = [(p.arg, "positional") for p in a.posonlyargs + a.args] + \
                              [(p.arg, "keyword") for p in a.kwonlyargs]
    return names, defs


def test_both_runtimes_have_the_same_public_api():
    torch_all, torch_defs = _api("torch_generate")
    mlx_all, mlx_defs = _api("mlx_generate")
    assert torch_all == mlx_all
    for name in ("prefill", "draft_block", "verify_block", "accept_greedy", "accept_sampling",
                 "stream_generate", "spec_generate", "greedy_generate"):
        assert name in torch_all
    for name in set(torch_all) & set(torch_defs) - FRAMEWORK_SPECIFIC:
        assert torch_defs[name] == mlx_defs[name], name
    for name in ("torch_generate", "mlx_generate"):  # one loop: spec_generate is stream_generate, collected
        assert "\nspec_generate = spec_generate_of(stream_generate)\n" in (RUNTIME / f"{name}.py").read_text()


def test_the_decode_loops_live_in_core_only():
    for name in ("torch_generate", "mlx_generate"):
        tree = ast.parse((RUNTIME / f"{name}.py").read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.While)], name


# ---- Sampling ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    dict(temperature=math.nan), dict(temperature=1e-300), dict(temperature=-1), dict(temperature=math.inf),
    dict(temperature=True), dict(top_p=0), dict(top_p=math.nan), dict(top_p=1.5), dict(top_k=-1),
    dict(top_k=True), dict(top_k=2.0), dict(seed=2**64), dict(seed=-1), dict(seed="1"),
])
def test_sampling_refuses_what_would_crash_or_mislead(kwargs):
    with pytest.raises(InputError) as err:
        Sampling(**kwargs)
    assert "\n" not in str(err.value)


def test_sampling_values():
    assert Sampling().greedy and core.GREEDY == Sampling(0.0, 1.0, 0, None)
    s = Sampling(0.7, 0.9, 5, 2**63 - 1)
    assert not s.greedy and (s.temperature, s.top_p, s.top_k) == (0.7, 0.9, 5)
    with pytest.raises(AttributeError):
        s.temperature = 1.0  # frozen


# ---- the pieces of a step ---------------------------------------------------------------------


def test_accept_prefix():
    assert core.accept_prefix([5, 6, 7], [5, 6, 9, 4]) == (2, [5, 6, 9])
    assert core.accept_prefix([5, 6, 7], [5, 6, 7, 4]) == (3, [5, 6, 7, 4])
    assert core.accept_prefix([1], [2, 3]) == (0, [2])


def test_stop_cut_and_finish_reason():
    assert core.cut_at_stop([1, 2, 3, 4], 10, {3}) == [1, 2, 3]
    assert core.cut_at_stop([1, 2, 3, 4], 2, {3}) == [1, 2]  # room first, then the stop token
    assert core.cut_at_stop([1, 2], 5, set()) == [1, 2]
    assert core.finish_reason([1, 3], 5, {3}) == "stop"
    assert core.finish_reason([1, 2], 2, {3}) == "length"
    assert core.finish_reason([1], 2, {3}) is None


def test_draft_capacity_is_bounded_by_the_run():
    assert core.draft_capacity(10, 5, 10**9) == 10 + 5 + 6
    assert core.draft_capacity(10, 10**12, 16) == 10 + core.INITIAL_DRAFT_CAPACITY + 16


def test_checks():
    assert core.check_block_size(None, 8) == 8 and core.check_block_size(3, 8) == 3
    for bad in (0, 9, True):
        with pytest.raises(InputError, match="--block-size .* between 1 and the draft's block_size 8"):
            core.check_block_size(bad, 8, "--block-size")
    with pytest.raises(InputError, match="prompt 2: token id 9 is outside the target's vocabulary .0..7."):
        core.check_token_ids([1, 9, -1], 8, "prompt 2")
    assert core.eos_ids(5) == [5] and core.eos_ids([1, "x", None, True, 2]) == [1, 2] and core.eos_ids(None) == []
    target = SimpleNamespace(max_positions=10)
    core.check_length(target, 4, 6)
    with pytest.raises(InputError, match="max_position_embeddings 10"):
        core.check_length(target, 4, 7)


def test_pairing():
    cfg = SimpleNamespace(hidden_size=8, target_layer_ids=(0, 3), mask_token_id=7, version=1, vocab_size=None)
    target = SimpleNamespace(hidden_size=8, num_layers=4, vocab_size=8)
    core.check_pairing(SimpleNamespace(cfg=cfg), target)
    for change, match in [(dict(hidden_size=16), "hidden_size"), (dict(target_layer_ids=(4,)), "out of range"),
                          (dict(mask_token_id=8), "mask_token_id"), (dict(version=2, vocab_size=4), "DFlash 2")]:
        with pytest.raises(RuntimeUnsupportedError, match=match):
            core.check_pairing(SimpleNamespace(cfg=SimpleNamespace(**{**vars(cfg), **change})), target)


# ---- the loop, on plain Python stand-ins: one stop-token cut and one stats bookkeeping ---------


class _Arr:
    """Stands in for a framework array: any index or slice gives itself; `data` holds plain ids."""

    def __init__(self, data):
        self.data = list(data)

    shape = property(lambda self: (1, len(self.data)))

    def __getitem__(self, key):
        return self


class _FakeSteps:
    """The framework steps core's loop calls, on plain ids. The target continues any token t with
    t + 1; the draft proposes that continuation right for the first `good` positions of a block."""

    def __init__(self, good: int) -> None:
        self.good = good

    def prefill(self, target, ids, cache, capture, step):
        return SimpleNamespace(logits=_Arr([t + 1 for t in ids.data]), features=_Arr([]))

    def pick(self, logits, sampling, rng):
        return logits.data[-1]

    def token_block(self, token, like):
        return _Arr([token])

    def draft_block(self, draft, target, last, features, start, cache, size, sampling, rng):
        right = range(last.data[0] + 1, last.data[0] + size)
        return _Arr(t if i < self.good else 0 for i, t in enumerate(right)), None

    def join_block(self, last, proposed):
        return _Arr(last.data + proposed.data)

    def verify_block(self, target, block, cache, start, capture):
        return SimpleNamespace(logits=_Arr([t + 1 for t in block.data]), features=_Arr([]))

    def accept_greedy(self, proposed, logits):
        return core.accept_prefix(proposed.data, logits.data)


def test_spec_steps_cut_stats_and_rollbacks():
    rollbacks = []
    target = SimpleNamespace(new_cache=list, rollback=lambda cache, n: rollbacks.append(n))
    draft = SimpleNamespace(target_layer_ids=(0,), new_cache=lambda capacity: None)
    steps = core.spec_steps(_FakeSteps(good=2), draft, target, _Arr([0, 0]), max_new_tokens=9, stops={7},
                            sampling=core.GREEDY, block_size=4, rng=None, clock=lambda: 0.0, prefill_step=None)
    got = []
    while True:
        try:
            got.append(next(steps))
        except StopIteration as done:
            stats = done.value
            break
    assert [t for s in got for t in s.tokens] == [1, 2, 3, 4, 5, 6, 7]  # ends at the stop token, kept
    assert [s.finish_reason for s in got] == [None, None, "stop"]
    assert stats.acceptance_lengths == [3, 3] and stats.accepted == [2, 2] and stats.drafted == [3, 3]
    assert stats.num_new_tokens == 7 == 1 + sum(stats.acceptance_lengths)
    assert rollbacks == [2, 5, 8]  # after the prefill, then to every step's committed length
    result = core.collect(core.spec_steps(_FakeSteps(good=3), draft, target, _Arr([0]), max_new_tokens=6,
                                          stops=set(), sampling=core.GREEDY, block_size=4, rng=None,
                                          clock=lambda: 0.0, prefill_step=None))
    assert result.tokens == [1, 2, 3, 4, 5, 6]  # cut to max_new_tokens: the last block is shorter
    assert result.stats.acceptance_lengths == [4, 1] and result.stats.drafted == [3, 1]
