"""Built-in PyTorch adapters: the model_type table, each layout against a real tiny model, lossless decoding."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.adapters import TORCH_ADAPTERS, registry, torch_adapter_for  # noqa: E402
from dflash_compat.exceptions import InputError, RuntimeUnsupportedError  # noqa: E402
from dflash_compat.runtime.torch_target import target_for  # noqa: E402
from tests.adapter_models import H, LAYOUTS, N_LAYERS, one_thread, reference_greedy, save_pair, tiny_model  # noqa: E402

EXPECTED = {
    "gpt2": "GPT2Adapter", "gptj": "GPT2Adapter", "gpt_neo": "GPT2Adapter", "codegen": "GPT2Adapter",
    "gpt_bigcode": "GPT2Adapter", "gpt_neox": "GPTNeoXAdapter", "opt": "OPTAdapter", "opt_plain": "OPTAdapter",
    "falcon": "FalconAdapter", "bloom": "FalconAdapter", "phi": "PhiAdapter", "llava": "TorchDefaultAdapter",
}
PROMPT = [1, 2, 3, 4, 5, 6, 7]

_one_thread = pytest.fixture(scope="module", autouse=True)(one_thread)


def _resolve(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.fixture(scope="module", params=LAYOUTS)
def layout(request):
    return request.param, tiny_model(request.param)


def test_table_entries_import_and_read_as_paths():
    for model_type, ref in TORCH_ADAPTERS.items():
        cls = registry.load_class(ref)
        paths = registry.layout_paths(cls)
        assert {"embed", "layers", "lm_head"} <= set(paths), model_type
        assert cls.name in registry.TORCH_NAMES, model_type
    assert registry.layout_paths(registry.load_class(registry.TORCH_DEFAULT)) == {"lm_head": "lm_head"}


def test_the_table_selects_by_model_type(layout):
    name, model = layout
    assert type(torch_adapter_for(model)).__name__ == EXPECTED[name]


def test_paths_are_the_objects_the_properties_return(layout):
    name, model = layout
    adapter = torch_adapter_for(model)
    for role, path in registry.layout_paths(type(adapter)).items():
        prop = registry.ROLE_PROPERTIES[role]
        assert _resolve(model, path) is getattr(adapter, prop), (name, role, path)


def test_features_embedding_and_head_match_the_model(layout):
    name, model = layout
    target = target_for(model)
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        ref = model(input_ids=ids, output_hidden_states=True)
        out = target.forward(ids, target.new_cache(), 0, capture=[0, 1, N_LAYERS - 1])
    hs = ref.hidden_states
    assert target.num_layers == N_LAYERS and target.hidden_size == H
    torch.testing.assert_close(out.features[..., : 2 * H], torch.cat([hs[1], hs[2]], dim=-1))
    torch.testing.assert_close(out.logits, ref.logits)
    assert target.embed(ids).shape == (1, len(PROMPT), H)  # the decoder width, also for OPT-350m-style
    norm = target.adapter.norm
    if norm is not None:  # logits == head(final_norm(output of the last layer))
        with torch.no_grad():
            torch.testing.assert_close(target.head(norm(out.features[..., 2 * H:])), ref.logits)


def test_opt_projections_are_part_of_embed_and_head():
    model = tiny_model("opt")
    target = target_for(model)
    ids = torch.tensor([PROMPT])
    assert model.get_input_embeddings().weight.shape[1] == 16  # narrower than the decoder
    with torch.no_grad():
        torch.testing.assert_close(target.embed(ids), model.model.decoder.project_in(model.get_input_embeddings()(ids)))
    assert target.adapter.project_in is not None and torch_adapter_for(tiny_model("opt_plain")).project_in is None


def test_default_adapter_reads_a_gpt2_layout_as_the_check_does():
    # One locator (adapters/locate.py): the default adapter finds transformer.h, as the deep check does
    from dflash_compat.adapters.torch_default import TorchDefaultAdapter

    model = tiny_model("gpt2")
    default = TorchDefaultAdapter(model)
    assert default.decoder_layers is model.transformer.h
    assert default.embed_tokens is model.transformer.wte and default.norm is model.transformer.ln_f


def test_default_adapter_refuses_a_model_without_block_list_and_names_the_fix():
    from torch import nn

    from dflash_compat.adapters.torch_default import TorchDefaultAdapter

    model = tiny_model("gpt2")
    model.transformer.h = nn.ModuleList()
    with pytest.raises(RuntimeUnsupportedError, match="dflash-check adapt"):
        _ = TorchDefaultAdapter(model).decoder_layers


def test_adapter_by_name_and_unknown_name():
    model = tiny_model("bloom")
    assert type(torch_adapter_for(model, "falcon")).__name__ == "FalconAdapter"
    assert type(torch_adapter_for(model, "bloom")).__name__ == "FalconAdapter"  # a model_type works as a name
    with pytest.raises(InputError, match="no built-in torch adapter"):
        torch_adapter_for(model, "nope")


@pytest.mark.parametrize("name", LAYOUTS)
def test_speculative_decoding_is_lossless(tmp_path, name):
    from dflash_compat.runtime import torch_generate as rt

    model, _, draft_folder = save_pair(tmp_path, name)
    result = rt.spec_generate(rt.load_draft(draft_folder), rt.target_for(model), PROMPT, max_new_tokens=20,
                              timed=False)
    assert result.tokens == reference_greedy(model, PROMPT, 20)


@pytest.mark.parametrize("name", ["gpt2", "opt", "bloom"])
def test_lossless_with_long_accepted_blocks(tmp_path, name, monkeypatch):
    """A stand-in proposer that replays the target's own continuation: every block is accepted, so
    the multi-token verify, feature slicing and cache cropping run through the adapter (tau ~ bs)."""
    from dflash_compat.runtime import torch_generate as rt

    model, _, draft_folder = save_pair(tmp_path, name)
    n = 24
    truth = reference_greedy(model, PROMPT, n + 8)

    def oracle(draft, target, last, features, start, cache, size, *args):
        k = start - len(PROMPT)  # truth[k] is the last committed token
        return torch.tensor([truth[k + 1: k + size]]), None

    monkeypatch.setattr(rt, "draft_block", oracle)
    result = rt.spec_generate(rt.load_draft(draft_folder), rt.target_for(model), PROMPT, max_new_tokens=n,
                              timed=False)
    assert result.tokens == truth[:n]
    assert result.stats.tau > 3
