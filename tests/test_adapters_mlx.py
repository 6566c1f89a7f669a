"""Built-in MLX adapters for the mlx-lm layouts the DFlash MLX loader cannot read, and the MLX shim."""

from __future__ import annotations

import pytest

mx = pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.adapters import mlx_adapter_for, registry  # noqa: E402
from dflash_compat.adapters.mlx_default import MLXDefaultAdapter  # noqa: E402
from dflash_compat.exceptions import RuntimeUnsupportedError  # noqa: E402
from dflash_compat.runtime.mlx_target import MLXTarget, target_for  # noqa: E402
from tests import mlx_models  # noqa: E402
from tests.adapter_models import H, MLX_CONFIGS, N_LAYERS, mlx_draft_config  # noqa: E402

PROMPT = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def draft(tmp_path_factory):
    from dflash_compat.runtime.mlx_draft import load_draft

    folder = mlx_models.save_draft(tmp_path_factory.mktemp("mlx-draft"), mlx_draft_config(), seed=1)
    return load_draft(folder)


@pytest.fixture(scope="module", params=sorted(MLX_CONFIGS))
def layout(request):
    cfg = MLX_CONFIGS[request.param]
    return request.param, cfg, mlx_models.build_target(cfg, scale=3.0)


def test_table_entries_import_and_read_as_paths():
    for model_type, ref in registry.MLX_ADAPTERS.items():
        paths = registry.layout_paths(registry.load_class(ref))
        assert {"embed", "layers"} <= set(paths), model_type
    assert set(MLX_CONFIGS) == set(registry.MLX_ADAPTERS)


def test_the_table_selects_and_maps_the_model_own_layers(layout):
    name, cfg, model = layout
    assert type(mlx_adapter_for(model, cfg)).__name__ == registry.MLX_ADAPTERS[name].rsplit(":", 1)[1]
    target = target_for(model, cfg)
    assert target.num_layers == N_LAYERS and target.hidden_size == H
    assert all(a is b for a, b in zip(target.layers, model.layers))  # mlx-lm's own `Model.layers`


def test_head_of_the_normed_last_layer_is_the_model_logits(layout):
    _, cfg, model = layout
    target = target_for(model, cfg)
    ids = mx.array([PROMPT])
    out = target.forward(ids, target.new_cache(), 0, capture=[N_LAYERS - 1])
    ref = model(ids)
    assert mx.allclose(out.logits, ref, atol=1e-4).item()
    assert mx.allclose(target.head(target.adapter.norm(out.features)), ref, atol=1e-4).item()


def test_speculative_decoding_is_lossless(layout, draft):
    from dflash_compat.runtime import mlx_generate as rt

    _, cfg, model = layout
    result = rt.spec_generate(draft, target_for(model, cfg), PROMPT, max_new_tokens=16)
    assert result.tokens == mlx_models.mlx_lm_greedy(model, PROMPT, 16)


def test_default_adapter_cannot_read_gpt2():
    with pytest.raises(RuntimeUnsupportedError, match="dflash-check adapt --framework mlx"):
        MLXTarget(MLXDefaultAdapter(mlx_models.build_target(MLX_CONFIGS["gpt2"]), MLX_CONFIGS["gpt2"]))


def test_mlx_shim_makes_gpt_neox_readable_and_lossless(tmp_path, draft):
    """GPT-NeoX keeps its head at model.embed_out: the reference loader would fall back to the
    (different) embed_in.as_linear. The shim puts both where the loader looks."""
    from dflash_compat.adapters.loading import load_shim_file
    from dflash_compat.adapters.shim import ShimPlan, render_shim, write_shim
    from dflash_compat.runtime import mlx_generate as rt

    cfg = MLX_CONFIGS["gpt_neox"]
    model = mlx_models.build_target(cfg, scale=3.0)
    paths = registry.layout_paths(registry.load_class(registry.MLX_ADAPTERS["gpt_neox"]))
    path = write_shim(render_shim(ShimPlan("mlx", paths, "gpt_neox")), tmp_path / "adapter.py")
    wrapped = load_shim_file(str(path), "mlx").wrap(model)
    assert wrapped.embed_tokens is model.model.embed_in and wrapped.lm_head is model.model.embed_out
    assert wrapped.model.layers is model.model.h
    target = MLXTarget(MLXDefaultAdapter(wrapped, cfg))
    result = rt.spec_generate(draft, target, PROMPT, max_new_tokens=16)
    assert result.tokens == mlx_models.mlx_lm_greedy(model, PROMPT, 16)
    # the reference loader's lookups (dflash.model_mlx.DFlashDraftModel.bind / _get_layers) now succeed
    assert hasattr(wrapped, "embed_tokens") and wrapped.model.layers[0] is model.layers[0]


def test_reference_mlx_port_fails_raw_and_is_lossless_through_the_shim(tmp_path, monkeypatch):
    """The dflash package's MLX port (a test oracle only) cannot bind a GPT-NeoX target; wrapped in
    the generated shim it runs, and its output is the target's own greedy output."""
    ref = pytest.importorskip("dflash.model_mlx")
    from dflash_compat.adapters.loading import load_shim_file
    from dflash_compat.adapters.shim import ShimPlan, render_shim, write_shim

    folder = mlx_models.save_draft(tmp_path / "draft", mlx_draft_config(), seed=1)
    monkeypatch.setattr(ref, "snapshot_download", lambda *a, **k: str(folder))  # a local folder, no Hub
    draft = ref.load_draft(str(folder))
    cfg, tok, prompt = MLX_CONFIGS["gpt_neox"], mlx_models.make_tokenizer(), mx.array(PROMPT)
    with pytest.raises(AttributeError):  # "Cannot find embed_tokens in Model"
        list(ref.stream_generate(mlx_models.build_target(cfg, scale=3.0), draft, tok, prompt, max_tokens=4))
    model = mlx_models.build_target(cfg, scale=3.0)
    expected = mlx_models.mlx_lm_greedy(model, PROMPT, 16)
    paths = registry.layout_paths(registry.load_class(registry.MLX_ADAPTERS["gpt_neox"]))
    shim = load_shim_file(str(write_shim(render_shim(ShimPlan("mlx", paths)), tmp_path / "adapter.py")), "mlx")
    steps = list(ref.stream_generate(shim.wrap(model), draft, tok, prompt, max_tokens=16))
    assert [t for s in steps for t in s.tokens] == expected
