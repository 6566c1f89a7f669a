"""The training forward is the inference draft: for any anchor, the block's logits in one batched
training forward equal what the runtime's draft_block computes when it drafts after that anchor."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.core import Sampling  # noqa: E402
from dflash_compat.runtime.torch_draft import load_draft  # noqa: E402
from dflash_compat.runtime.torch_target import target_for  # noqa: E402
from dflash_compat.train.objective import (  # noqa: E402
    BlockBatch,
    block_attention_mask,
    block_loss,
    position_weights,
    sample_anchors,
    target_pass,
)

from .tiny_dflash import make_pair  # noqa: E402

T = 20


def _setup(tmp_path, **draft):
    model, _, folder = make_pair(tmp_path, seed=3, block_size=5, target={"vocab": 48}, draft=draft)
    target = target_for(model)
    ids = torch.randint(0, 47, (2, T), generator=torch.Generator().manual_seed(1))
    return load_draft(folder), target, ids


def _training_logits(draft, target, ids, anchors):
    features, _ = target_pass(target, draft, ids, "target")
    bs = draft.block_size
    pos = anchors[:, None] + torch.arange(bs)
    block = torch.full((ids.shape[0], anchors.numel(), bs), draft.mask_token_id)
    block[:, :, 0] = ids[:, anchors]
    hidden = draft.forward_masked(target.embed(block.flatten(1)), features, pos.flatten(),
                                  lambda c, w: block_attention_mask(T, anchors, bs, c, w))
    return draft.compute_logits(hidden, target.head).view(ids.shape[0], anchors.numel(), bs, -1)


@pytest.mark.parametrize("layer_types", [None, ["sliding_attention", "full_attention"]])
def test_training_forward_equals_draft_block(tmp_path, layer_types):
    extra = {} if layer_types is None else {"layer_types": layer_types, "sliding_window": 6, "use_sliding_window": True}
    draft, target, ids = _setup(tmp_path, **extra)
    anchors = torch.tensor([1, 6, 7, 13, 18])  # blocks overlap, and the last runs past the sequence
    with torch.no_grad():
        logits = _training_logits(draft, target, ids, anchors)  # [B, A, bs, V]
        for b in range(ids.shape[0]):
            for j, a in enumerate(anchors.tolist()):
                features = target_pass(target, draft, ids[b:b + 1, :a], "target")[0]  # context 0 .. a-1 only
                last = ids[b:b + 1, a:a + 1]
                tokens, _ = rt.draft_block(draft, target, last, features, a, draft.new_cache(), draft.block_size)
                _, probs = rt.draft_block(draft, target, last, features, a, draft.new_cache(), draft.block_size,
                                          Sampling(temperature=1.0), torch.Generator().manual_seed(0))
                ours = logits[b, j, 1:]  # [bs-1, V]
                assert torch.equal(ours.argmax(-1), tokens[0])
                assert torch.allclose(torch.softmax(ours, -1), probs[0], atol=1e-5)


def test_mask_blocks_do_not_see_each_other_or_the_future():
    mask = block_attention_mask(10, torch.tensor([2, 5]), 3)
    assert mask.shape == (6, 16)
    assert mask[0, :10].tolist() == [True, True] + [False] * 8  # anchor 2 sees positions 0, 1
    assert mask[3, :10].tolist() == [True] * 5 + [False] * 5
    assert mask[0, 10:].tolist() == [True] * 3 + [False] * 3  # its own block, both directions
    assert mask[5, 10:].tolist() == [False] * 3 + [True] * 3
    causal = block_attention_mask(10, torch.tensor([2]), 3, causal=True)
    assert causal[0, 10:].tolist() == [True, False, False] and causal[2, 10:].tolist() == [True] * 3


def test_weights_anchors_and_loss(tmp_path):
    w = position_weights(8, 4.0)
    assert w[0] == 0 and w[1] == 1 and torch.isclose(w[2], torch.exp(torch.tensor(-0.25)))
    mask = torch.zeros(2, T, dtype=torch.bool)
    mask[1, 10:] = True
    anchors = sample_anchors(mask, 100, torch.Generator().manual_seed(0))
    assert anchors.tolist() == list(range(9, T - 1))  # a+1 must be loss-masked; a >= 1
    draft, target, ids = _setup(tmp_path)
    loss, stats = block_loss(draft, target, BlockBatch(ids, torch.ones_like(ids, dtype=torch.bool), anchors), 4.0)
    assert loss.requires_grad and torch.isfinite(loss) and len(stats["accuracy"]) == draft.block_size - 1
    loss.backward()
    assert draft.fc.weight.grad is not None and draft.fc.weight.grad.abs().sum() > 0
