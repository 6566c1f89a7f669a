"""The PyTorch reference runtime: conformance with the dflash package and with plain greedy decoding,
acceptance accounting, context-feature capture, cache rollback, config variants."""

from __future__ import annotations

import inspect
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("dflash")

import dflash.model as ref  # noqa: E402  (the oracle, tests only)

from dflash_compat.exceptions import InputError, RuntimeUnsupportedError, WeightsError  # noqa: E402
from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.torch_draft import DFlash2DraftModel, load_draft  # noqa: E402
from dflash_compat.runtime.torch_target import TorchTarget  # noqa: E402

from .tiny_dflash import draft_config, draft_state, make_pair, reference_generate, save_draft, target_config  # noqa: E402

PROMPT = [1, 5, 9, 3, 7, 2, 4]
# the dflash package still passes `past_key_values`, which transformers 5 renames
pytestmark = pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated:FutureWarning")


@pytest.fixture(autouse=True)
def _cpu_clock(monkeypatch):
    monkeypatch.setattr(ref, "_cuda_time", time.perf_counter)
    torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------
# greedy conformance: ours == dflash package == the target's own greedy decoding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("seed,block_size,vocab", [(0, 2, 32), (1, 4, 16), (2, 8, 64), (3, 16, 32), (4, 5, 16)])
def test_greedy_matches_reference_and_target(tmp_path, version, seed, block_size, vocab):
    model, _, folder = make_pair(tmp_path, seed=seed, version=version, block_size=block_size, target={"vocab": vocab})
    target = rt.target_for(model)
    draft = load_draft(folder)
    assert isinstance(draft, DFlash2DraftModel) == (version == 2)
    n = 37
    ours = rt.spec_generate(draft, target, PROMPT, max_new_tokens=n)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=n)
    theirs, their_lengths = reference_generate(folder, model, PROMPT, n, v2=version == 2)
    assert ours.tokens == plain.tokens == theirs
    assert ours.stats.acceptance_lengths == their_lengths
    assert len(ours.tokens) == n == 1 + sum(ours.stats.acceptance_lengths)
    assert all(1 <= a <= block_size for a in ours.stats.acceptance_lengths)


@pytest.mark.parametrize("version", [1, 2])
def test_per_call_block_size_and_stop_tokens(tmp_path, version):
    model, _, folder = make_pair(tmp_path, seed=5, version=version, block_size=8, target={"vocab": 16})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=30).tokens
    stop = plain[11]
    cut = plain[: plain.index(stop) + 1]
    for bs in (1, 3, 8):
        ours = rt.spec_generate(draft, target, PROMPT, max_new_tokens=30, block_size=bs, stop_token_ids=[stop])
        theirs, lengths = reference_generate(folder, model, PROMPT, 30, block_size=bs, stop=[stop], v2=version == 2)
        assert ours.tokens == cut == theirs
        assert ours.stats.acceptance_lengths == lengths
        assert rt.greedy_generate(target, PROMPT, max_new_tokens=30, stop_token_ids=[stop]).tokens == cut
    with pytest.raises(InputError):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, block_size=9)


def test_max_new_tokens_edges(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=6, block_size=4, target={"vocab": 16})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=6).tokens
    for n in (1, 2, 5, 6):
        assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=n).tokens == plain[:n]
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=0).tokens == []


# ---------------------------------------------------------------------------------------------
# acceptance accounting with a stand-in draft that replays the target's own continuation
# ---------------------------------------------------------------------------------------------


def _replay(monkeypatch, continuation, prompt_len, wrong_at=None):
    """Replace draft_block by a proposer that knows the target's greedy continuation; with
    `wrong_at` = j it gets block position j wrong every time (so j-1 tokens are accepted)."""

    def fake_draft_block(draft, target, last, features, start, cache, size, *args, **kwargs):
        done = start - prompt_len + 1  # tokens committed so far
        guess = list(continuation[done: done + size - 1])
        guess += [0] * (size - 1 - len(guess))
        if wrong_at is not None and wrong_at <= len(guess):
            guess[wrong_at - 1] = (guess[wrong_at - 1] + 1) % target.vocab_size
        return torch.tensor([guess], device=last.device), None

    monkeypatch.setattr(rt, "draft_block", fake_draft_block)


@pytest.mark.parametrize("bs", [2, 4, 16])
def test_replayed_continuation_gives_tau_equal_block_size(tmp_path, monkeypatch, bs):
    model, _, folder = make_pair(tmp_path, seed=7, block_size=16, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    n = 1 + 5 * bs
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=n + bs).tokens
    _replay(monkeypatch, plain, len(PROMPT))
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=n, block_size=bs)
    assert out.tokens == plain[:n]
    s = out.stats
    assert s.acceptance_lengths == [bs] * 5 and s.tau == bs
    assert s.histogram == {**{k: 0 for k in range(1, bs)}, bs: 5}
    assert s.per_position_acceptance == [1.0] * (bs - 1)
    assert s.accepted == s.drafted == [bs - 1] * 5


def test_replay_with_one_wrong_position(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=8, block_size=8, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=40).tokens
    _replay(monkeypatch, plain, len(PROMPT), wrong_at=4)
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=1 + 4 * 6, block_size=8)
    assert out.tokens == plain[:25]  # still lossless: the bonus token replaces the wrong one
    assert out.stats.acceptance_lengths == [4] * 6
    assert out.stats.per_position_acceptance == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------
# a broken rollback must be caught
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("break_what", ["dynamic_cache_crop", "adapter_rollback"])
def test_broken_rollback_is_detected(tmp_path, monkeypatch, break_what):
    model, _, folder = make_pair(tmp_path, seed=9, block_size=8, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=30).tokens
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=30).tokens == plain
    if break_what == "dynamic_cache_crop":
        from transformers import DynamicCache

        monkeypatch.setattr(DynamicCache, "crop", lambda self, n: None)
    else:
        monkeypatch.setattr(TorchTarget, "rollback", lambda self, cache, length: None)
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=30).tokens != plain


# ---------------------------------------------------------------------------------------------
# the target: features by hooks, rollback kinds, old and new cache APIs, VLM wrappers
# ---------------------------------------------------------------------------------------------


def test_captured_features_equal_hidden_states(tmp_path):
    model, tcfg, _ = make_pair(tmp_path, seed=10, target={"layers": 4})
    target = rt.target_for(model)
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        hs = model(ids, output_hidden_states=True).hidden_states
        calls = []
        hooks_before = [len(layer._forward_hooks) for layer in target.layers]
        orig = model.forward
        model.forward = lambda *a, **k: calls.append(k) or orig(*a, **k)
        out = target.forward(ids, target.new_cache(), 0, capture=[2, 0, 1])
        model.forward = orig
    h = tcfg["hidden_size"]
    for slot, layer_id in enumerate([2, 0, 1]):
        torch.testing.assert_close(out.features[..., slot * h:(slot + 1) * h], hs[layer_id + 1], rtol=0, atol=0)
    assert not calls[0].get("output_hidden_states")  # only the hooked layers are kept
    assert [len(layer._forward_hooks) for layer in target.layers] == hooks_before  # ours are removed


def test_rollback_with_sliding_window_target(tmp_path):
    # sliding layers (window 3) past their window: transformers 5 needs past recording to crop
    tgt = {"vocab": 32, "use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}
    model, _, folder = make_pair(tmp_path, seed=11, block_size=6, target=tgt)
    target, draft = rt.target_for(model), load_draft(folder)
    assert target.rollback_kind == "crop"
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=24).tokens
    assert rt.spec_generate(draft, target, PROMPT, max_new_tokens=24).tokens == plain
    assert reference_generate(folder, model, PROMPT, 24)[0] == plain


def test_rollback_on_a_legacy_cache():
    class LegacyCache:  # transformers 4.x semantics: crop(n >= 0) keeps n positions, crop(-n) drops n
        def __init__(self, n):
            self.n = n

        def get_seq_length(self):
            return self.n

        def crop(self, max_length):
            self.n = self.n - abs(max_length) if max_length < 0 else min(self.n, max_length)

    target = TorchTarget.__new__(TorchTarget)
    cache = LegacyCache(10)
    target.rollback(cache, 10)  # must not call crop(0), which would empty a 4.x cache
    assert cache.n == 10
    target.rollback(cache, 6)
    assert cache.n == 6


def test_target_taking_past_key_values(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=12, block_size=4, target={"vocab": 16})

    class OldStyle(torch.nn.Module):  # a model whose forward still takes `past_key_values`
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config = inner, inner.config
            self.lm_head = inner.lm_head

        def get_input_embeddings(self):
            return self.inner.get_input_embeddings()

        def get_decoder(self):
            return self.inner.model

        def forward(self, input_ids, position_ids=None, past_key_values=None, use_cache=None):
            # the inner model's own name for the cache: `cache` (newer transformers 5) or past_key_values
            name = "cache" if "cache" in inspect.signature(self.inner.forward).parameters else "past_key_values"
            return self.inner(input_ids, position_ids=position_ids, use_cache=use_cache, **{name: past_key_values})

    target = rt.target_for(OldStyle(model))
    assert target._cache_kwarg == "past_key_values" and target._keep_kwarg is None
    plain = rt.greedy_generate(rt.target_for(model), PROMPT, max_new_tokens=16).tokens
    assert rt.greedy_generate(target, PROMPT, max_new_tokens=16).tokens == plain
    assert rt.spec_generate(load_draft(folder), target, PROMPT, max_new_tokens=16).tokens == plain


def test_vlm_wrapper(tmp_path):
    from transformers import LlavaConfig, LlavaForConditionalGeneration

    tcfg = target_config(vocab=32)
    vision = dict(model_type="clip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, image_size=8, patch_size=4)
    torch.manual_seed(13)
    vlm = LlavaForConditionalGeneration(LlavaConfig(text_config=tcfg, vision_config=vision, image_token_index=31)).eval()
    target = rt.target_for(vlm)
    assert target.num_layers == 4 and target.hidden_size == 32 and target.vocab_size == 32
    assert target.layers is vlm.get_decoder().layers
    dcfg = draft_config(tcfg, block_size=4, mask_token_id=30)
    draft = load_draft(save_draft(tmp_path / "d", dcfg, draft_state(dcfg, 1)))
    plain = rt.greedy_generate(target, [1, 2, 3], max_new_tokens=12).tokens
    assert rt.spec_generate(draft, target, [1, 2, 3], max_new_tokens=12).tokens == plain


def test_recurrent_target_is_refused(tmp_path):
    from transformers import MambaConfig, MambaForCausalLM

    mamba = MambaForCausalLM(MambaConfig(vocab_size=32, hidden_size=32, state_size=4, num_hidden_layers=2)).eval()
    target = rt.target_for(mamba)
    assert target.rollback_kind == "none"
    tcfg = target_config(vocab=32)
    dcfg = draft_config(tcfg, block_size=4, target_layer_ids=(0,))
    draft = load_draft(save_draft(tmp_path / "d", dcfg, draft_state(dcfg)))
    with pytest.raises(RuntimeUnsupportedError, match="rolled back|cannot undo"):
        rt.spec_generate(draft, target, [1, 2, 3], max_new_tokens=8)


def test_pairing_mismatches_are_refused(tmp_path):
    model, tcfg, _ = make_pair(tmp_path, seed=14, target={"vocab": 32, "layers": 4})
    target = rt.target_for(model)
    for change, match in [({"target_layer_ids": (0, 4)}, "out of range"), ({"mask_token_id": 40}, "mask_token_id")]:
        dcfg = draft_config(tcfg, **change)
        draft = load_draft(save_draft(tmp_path / str(len(match)), dcfg, draft_state(dcfg)))
        with pytest.raises(RuntimeUnsupportedError, match=match):
            rt.spec_generate(draft, target, PROMPT, max_new_tokens=4)


def test_weights_are_checked(tmp_path):
    tcfg = target_config()
    dcfg = draft_config(tcfg)
    state = draft_state(dcfg)
    state.pop("fc.weight")
    with pytest.raises(WeightsError, match="missing fc.weight"):
        load_draft(save_draft(tmp_path / "a", dcfg, state))
    state = draft_state(dcfg)
    state["norm.weight"] = torch.ones(7)
    with pytest.raises(WeightsError, match="norm.weight has shape"):
        load_draft(save_draft(tmp_path / "b", dcfg, state))
    folder = save_draft(tmp_path / "c", dcfg, draft_state(dcfg))
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(WeightsError, match="no \\*.safetensors"):
        load_draft(folder)


# ---------------------------------------------------------------------------------------------
# config variants: our draft's numbers equal the dflash package's on the same weights
# ---------------------------------------------------------------------------------------------

VARIANTS = {
    "top_level_block_size": dict(block_size=None, extra={"block_size": 6}),
    "rope_parameters": dict(extra={"rope_theta": None, "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0}}),
    "rope_scaling_linear": dict(extra={"rope_scaling": {"rope_type": "linear", "factor": 2.0}}),
    "sliding_layers": dict(layers=3, extra={"layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                                            "sliding_window": 3, "use_sliding_window": True}),
    "sliding_non_causal": dict(extra={"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 2,
                                      "use_sliding_window": True, "is_causal": False}),
    "causal": dict(extra={"is_causal": True}),
    "embedding_scale_multiplier_softcap": dict(dflash={"input_embedding_scale": 2.5, "output_multiplier": 0.7,
                                                       "final_logit_softcapping": 3.0}),
    "top_level_softcap": dict(extra={"final_logit_softcapping": 2.0}),
}


def _variant(tmp_path, name, version):
    v = VARIANTS[name]
    tcfg = target_config(vocab=32)
    model = make_pair(tmp_path, seed=15, target={"vocab": 32})[0]
    dcfg = draft_config(tcfg, version=version, block_size=v.get("block_size", 6), layers=v.get("layers", 2),
                        dflash_extra=v.get("dflash"))
    if v.get("block_size", 6) is None:
        dcfg["dflash_config"].pop("block_size")
    for k, val in v.get("extra", {}).items():
        if val is None:
            dcfg.pop(k, None)
        else:
            dcfg[k] = val
    folder = save_draft(tmp_path / f"{name}-v{version}", dcfg, draft_state(dcfg, 3))
    return model, folder


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_config_variants_match_reference(tmp_path, name, version):
    model, folder = _variant(tmp_path, name, version)
    target = rt.target_for(model)
    ours = load_draft(folder)
    cls = ref.DFlash2DraftModel if version == 2 else ref.DFlashDraftModel
    theirs = cls.from_pretrained(str(folder), dtype=torch.float32).eval()
    assert ours.block_size == theirs.block_size
    assert list(ours.target_layer_ids) == list(theirs.target_layer_ids)
    gen = torch.Generator().manual_seed(0)
    their_cache = ref._make_cache(theirs.config)
    our_cache = ours.new_cache()
    start, size = 0, ours.block_size
    head = model.lm_head
    with torch.no_grad():
        for ctx in (9, 3, 1):  # three successive draft calls: the context cache grows
            start += ctx
            feats = torch.randn(1, ctx, 2 * 32, generator=gen)
            block = torch.randint(0, 31, (1, size), generator=gen)
            block[:, 1:] = ours.mask_token_id
            scale = float(ref._draft_value(theirs.config, "input_embedding_scale", 1.0))
            noise = ref._raw_input_embeddings(model, block, scale)
            h_ref = theirs(target_hidden=feats, noise_embedding=noise, past_key_values=their_cache, use_cache=True,
                           position_ids=torch.arange(start - ctx, start + size)[None])[:, 1:]
            ref._crop_to(their_cache, start)
            logits_ref = theirs.compute_logits(h_ref, head)
            h_ours = ours(noise, feats, start, our_cache)[:, 1:]
            torch.testing.assert_close(h_ours, h_ref, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(ours.compute_logits(h_ours, head), logits_ref, rtol=1e-5, atol=1e-5)
            # draft_block (the runtime's entry point: embedding scale, head, selector) proposes the same tokens
            our_cache.length -= ctx  # replay the same call through draft_block
            tokens, _ = rt.draft_block(ours, target, block[:, :1], feats, start, our_cache, size)
            if version == 2:
                ref_tokens = theirs.propose(h_ref, block[:, 0], head, 0.0)[0]
            else:
                ref_tokens = logits_ref.argmax(-1)
            assert tokens.tolist() == ref_tokens.tolist()
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=20).tokens
    assert rt.spec_generate(ours, target, PROMPT, max_new_tokens=20).tokens == plain
    assert reference_generate(folder, model, PROMPT, 20, v2=version == 2)[0] == plain


def test_sampling_probabilities_of_draft_match_reference(tmp_path):
    model, folder = _variant(tmp_path, "embedding_scale_multiplier_softcap", 1)
    target, ours = rt.target_for(model), load_draft(folder)
    theirs = ref.DFlashDraftModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    feats = torch.randn(1, 5, 64, generator=torch.Generator().manual_seed(1))
    block = torch.tensor([[3] + [ours.mask_token_id] * 5])
    with torch.no_grad():
        noise = ref._raw_input_embeddings(model, block, 2.5)
        h = theirs(target_hidden=feats, noise_embedding=noise, position_ids=torch.arange(0, 11)[None])[:, 1:]
        want = ref._sampling_probs(theirs.compute_logits(h, model.lm_head), 0.8, 0.9, 7)
        _, got = rt.draft_block(ours, target, block[:, :1], feats, 5, ours.new_cache(), 6, rt.Sampling(0.8, 0.9, 7),
                                torch.Generator().manual_seed(0))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("temperature,top_p,top_k", [(1.0, 1.0, 0), (0.7, 0.9, 0), (1.3, 1.0, 5), (0.5, 0.6, 9)])
def test_sampling_probs_match_reference(temperature, top_p, top_k):
    logits = torch.randn(3, 4, 40, generator=torch.Generator().manual_seed(2)) * 3
    torch.testing.assert_close(rt.sampling_probs(logits, rt.Sampling(temperature, top_p, top_k)),
                               ref._sampling_probs(logits, temperature, top_p, top_k), rtol=1e-6, atol=1e-7)


def test_weight_name_variants_load_the_same(tmp_path):
    tcfg = target_config()
    dcfg = draft_config(tcfg, version=2)
    state = draft_state(dcfg, 5)
    plain = load_draft(save_draft(tmp_path / "zlab", dcfg, state))
    renamed = {("model." + k) + (".weight" if "codebook" in k else ""): v for k, v in state.items()}
    other = load_draft(save_draft(tmp_path / "renamed", dcfg, renamed))
    for (name, a), (_, b) in zip(plain.state_dict().items(), other.state_dict().items()):
        assert torch.equal(a, b), name


def test_the_built_cache_settles_layer_types_the_names_do_not_know():
    # smoke's runtime asks the same built-cache classification as the deep check (adapters/cache_layers.py):
    # a layer type it does not know by name but whose cache layers crop exactly is run, as DF201 passes it
    # (zoo truth: inkling_text's `hybrid` names, DSA's `indexed_attention`); a real recurrent cache stays refused
    from types import SimpleNamespace

    from transformers import AutoConfig, AutoModelForCausalLM

    from dflash_compat.runtime.torch_target import _rollback_kind
    from tests.deep_helpers import TINY

    odd = SimpleNamespace(model_type="llama", layer_types=["full_attention", "vendor_attention"])
    assert _rollback_kind(odd)[0] == "none" and "vendor_attention" in _rollback_kind(odd)[1]
    with torch.device("meta"):
        llama = AutoModelForCausalLM.from_config(AutoConfig.for_model(**TINY["llama"]))
        hybrid = AutoModelForCausalLM.from_config(AutoConfig.for_model(**TINY["qwen3_next"]))
    assert _rollback_kind(odd, llama) == ("crop", None)
    hybrid_types = SimpleNamespace(model_type="qwen3_next", layer_types=hybrid.config.layer_types)
    assert _rollback_kind(hybrid_types, hybrid)[0] == "none"
