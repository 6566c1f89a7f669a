"""Every draft family in the reference runtime: the Muse-Glimmer assistant runs on torch and MLX, token for token
and proposal for proposal as transformers' own assistant does; every other family is refused by `smoke` in one
line (exit 2) before any weight is loaded."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from dflash_compat.cli.app import cli  # noqa: E402
from dflash_compat.exceptions import RuntimeUnsupportedError, WeightsError  # noqa: E402
from dflash_compat.runtime import torch_draft, torch_generate  # noqa: E402
from dflash_compat.runtime.draft_config import RUNTIME_FORMATS, draft_config, normalise_key  # noqa: E402
from dflash_compat.specs import parse_draft_config  # noqa: E402
from dflash_compat.specs.families import FAMILIES  # noqa: E402

from .tiny_dflash import save_draft, target_config, tiny_target  # noqa: E402
from .tiny_families import FAMILY_BUILDERS, assistant_config, assistant_state, muse_glimmer_target, save_family  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "families"
PROMPT = [1, 2, 3, 4, 5, 6, 1, 2, 3, 4]
VOCAB = 8  # small enough that random drafts get tokens accepted


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """A tiny Qwen3 target saved by transformers (read by transformers and by mlx-lm), and its config."""
    root = tmp_path_factory.mktemp("families")
    model = tiny_target(3, vocab=VOCAB)
    model.save_pretrained(str(root / "target"), safe_serialization=True)
    return root, model, target_config(vocab=VOCAB)


def _assistant(root: Path, tcfg: dict, window: int) -> Path:
    cfg = assistant_config(tcfg, block_size=4, sliding_window=window, mask_token_id=VOCAB - 1)
    return save_draft(root / f"assistant-w{window}", cfg, assistant_state(cfg, 5))


def _transformers_run(target, folder: Path, n: int):
    """transformers' own DFlash loop (generate(speculation_type="dflash") with MuseGlimmerAssistantModel):
    the tokens, the proposals of each step, and the draft tokens accepted per step."""
    from transformers import MuseGlimmerAssistantModel
    from transformers.generation import candidate_generator as cg

    assistant = MuseGlimmerAssistantModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    steps = []
    original = cg.DFlashTokenCandidateGenerator.get_candidates

    def record(self, input_ids, model_kwargs, model_outputs, is_first_iteration, n_last_matches, **kw):
        out = original(self, input_ids, model_kwargs, model_outputs, is_first_iteration, n_last_matches, **kw)
        if not is_first_iteration:
            steps.append((n_last_matches, out[0][0, input_ids.shape[1]:].tolist()))
        return out

    cg.DFlashTokenCandidateGenerator.get_candidates = record
    try:
        out = target.generate(torch.tensor([PROMPT]), assistant_model=assistant, speculation_type="dflash",
                              do_sample=False, max_new_tokens=n)
    finally:
        cg.DFlashTokenCandidateGenerator.get_candidates = original
    # n_last_matches of a call is what the previous step accepted
    return out[0, len(PROMPT):].tolist(), [s[1] for s in steps], [s[0] for s in steps[1:]]


def _our_run(draft, target, n: int, monkeypatch):
    proposals = []
    original = torch_generate.draft_block

    def record(*args, **kw):
        out = original(*args, **kw)
        proposals.append(out[0][0].tolist())
        return out

    monkeypatch.setattr(torch_generate, "draft_block", record)
    res = torch_generate.spec_generate(draft, torch_generate.target_for(target), PROMPT, max_new_tokens=n)
    monkeypatch.undo()
    return res.tokens, proposals, res.stats.accepted


def _same_as_transformers(ours, theirs) -> bool:
    (tokens, props, acc), (t_tokens, t_props, t_acc) = ours, theirs
    # Near max_new_tokens we draft a block only as long as the room left, transformers a whole block (trimmed
    # after): with bidirectional attention a shorter block proposes other tokens, so the last steps differ.
    k = next((i for i, (p, q) in enumerate(zip(props, t_props)) if len(p) != len(q)), min(len(props), len(t_props)))
    return tokens == t_tokens and k >= len(t_props) - 2 and props[:k] == t_props[:k] and acc[:k] == t_acc[:k]


@pytest.mark.parametrize("window", [1, 3, 2048])
def test_assistant_matches_transformers_assistant(qwen, window, monkeypatch):
    """The tiny window makes the bidirectional inclusive window |q - kv| <= w bite inside the block."""
    torch.set_num_threads(1)
    root, model, tcfg = qwen
    folder = _assistant(root, tcfg, window)
    theirs = _transformers_run(model, folder, 30)
    ours = _our_run(torch_draft.load_draft(folder), model, 30, monkeypatch)
    assert _same_as_transformers(ours, theirs), (ours, theirs)
    assert ours[0] == torch_generate.greedy_generate(torch_generate.target_for(model), PROMPT, max_new_tokens=30).tokens
    if window == 3:
        assert sum(ours[2]) > 0  # some proposals accepted: the comparison covers acceptance too


def test_the_comparison_catches_a_causal_draft_or_an_exclusive_window(qwen, monkeypatch):
    torch.set_num_threads(1)
    root, model, tcfg = qwen
    folder = _assistant(root, tcfg, 1)
    theirs = _transformers_run(model, folder, 30)
    exclusive = torch_draft.load_draft(folder)
    exclusive.cfg = dataclasses.replace(exclusive.cfg, window_inclusive=False)  # Qwen3's q - kv < w
    causal = torch_draft.load_draft(folder)
    for layer in causal.layers:
        layer.causal = True  # what the z-lab default makes of sliding layers
    for wrong in (exclusive, causal):
        assert not _same_as_transformers(_our_run(wrong, model, 30, monkeypatch), theirs)


def test_assistant_on_a_muse_glimmer_target_matches_transformers(tmp_path, monkeypatch):
    """A Muse Glimmer target: the block is embedded with the raw table rows (no embed_norm) and proposed through
    the raw output head, as transformers' candidate generator does (candidate_generator.py:1551-1566, 1646-1648)."""
    torch.set_num_threads(1)
    model = muse_glimmer_target(tmp_path / "target")
    tcfg = target_config(vocab=32)
    cfg = assistant_config(tcfg, block_size=4, target_layer_ids=(0, 2), mask_token_id=31, sliding_window=2)
    folder = save_draft(tmp_path / "assistant", cfg, assistant_state(cfg, 5))
    theirs = _transformers_run(model, folder, 24)
    ours = _our_run(torch_draft.load_draft(folder), model, 24, monkeypatch)
    assert _same_as_transformers(ours, theirs), (ours, theirs)


def _smoke(target: Path, draft: Path, *args: str):
    torch.set_num_threads(1)
    res = CliRunner().invoke(cli, ["smoke", str(target), "--draft", str(draft), "--prompt-ids",
                                   ",".join(map(str, PROMPT)), "--max-new-tokens", "16", "-f", "json", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _backend_available(backend: str) -> None:
    if backend == "mlx":
        pytest.importorskip("mlx.core")
        pytest.importorskip("mlx_lm")


@pytest.mark.parametrize("backend", ["torch", "mlx"])
@pytest.mark.parametrize("fmt", sorted(RUNTIME_FORMATS))
def test_smoke_is_lossless_on_every_runnable_family(qwen, fmt, backend):
    _backend_available(backend)
    root, _, tcfg = qwen
    draft = save_family(root / f"run-{fmt}", fmt, tcfg)
    res = _smoke(root / "target", draft, "--backend", backend)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["summary"]["lossless"] is True and payload["backend"] == backend
    assert payload["results"][0]["output_tokens"] == payload["results"][0]["baseline_tokens"]


@pytest.mark.parametrize("backend", ["torch", "mlx"])
def test_smoke_runs_the_assistant_on_a_muse_glimmer_target(tmp_path, backend):
    _backend_available(backend)
    muse_glimmer_target(tmp_path / "target", text_only=backend == "mlx")
    cfg = assistant_config(target_config(vocab=32), block_size=4, mask_token_id=31, sliding_window=2)
    draft = save_draft(tmp_path / "assistant", cfg, assistant_state(cfg, 5))
    res = _smoke(tmp_path / "target", draft, "--backend", backend)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"]["lossless"] is True


def test_mlx_and_torch_assistants_agree(qwen):
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from dflash_compat.runtime import mlx_draft, mlx_generate

    torch.set_num_threads(1)
    root, model, tcfg = qwen
    folder = _assistant(root, tcfg, 3)
    t_out = torch_generate.spec_generate(torch_draft.load_draft(folder), torch_generate.target_for(model), PROMPT,
                                         max_new_tokens=30)
    m_out = mlx_generate.spec_generate(mlx_draft.load_draft(folder), mlx_generate.load_target(root / "target"),
                                       PROMPT, max_new_tokens=30)
    assert m_out.tokens == t_out.tokens
    assert m_out.stats.accepted == t_out.stats.accepted and sum(t_out.stats.accepted) > 0


REFUSED = sorted(set(FAMILY_BUILDERS) - RUNTIME_FORMATS)


def test_every_family_has_a_tiny_checkpoint_here():
    assert set(FAMILY_BUILDERS) == set(FAMILIES)


@pytest.mark.parametrize("fmt", REFUSED)
def test_smoke_refuses_the_other_families_before_loading_anything(qwen, tmp_path, fmt):
    """The target folder holds no weights at all: had smoke loaded anything first, it would fail on that."""
    root, _, tcfg = qwen
    draft = save_family(tmp_path / fmt, fmt, tcfg)
    bare = tmp_path / "bare-target"
    bare.mkdir()
    shutil.copy(root / "target" / "config.json", bare / "config.json")
    for backend in ("torch", "mlx"):
        res = _smoke(bare, draft, "--backend", backend)
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dflash-check: error: draft "), res.stderr
        assert f"{FAMILIES[fmt].title} drafts do not run in the reference runtime" in lines[0]
        assert "safetensors" not in lines[0] and "Traceback" not in res.output


@pytest.mark.parametrize("fmt, remedy", [
    ("speculators", "dflash-check convert DRAFT --to zlab -o OUT"),
    ("speculators-dflash2", "dflash-check convert DRAFT --to zlab -o OUT"),
    ("dflash2-beam", 'set architectures to ["DFlash2DraftModel"]'),
    ("minimax-dflash2", 'set architectures to ["DFlash2DraftModel"]'),
    ("ricursive-dflash2", "NoPE layers"),
    ("qwen3-xpress", "refiner head"),
    ("lilicorr", "lattice correlator"),
    ("laguna-dflash", "Laguna layers"),
    ("domino", "Domino projector"),
    ("unknown", "name a known architecture"),
])
def test_each_refusal_says_what_would_make_it_runnable(tmp_path, fmt, remedy):
    folder = save_family(tmp_path / fmt, fmt, target_config(vocab=16))
    spec = parse_draft_config(json.loads((folder / "config.json").read_text()), str(folder))
    with pytest.raises(RuntimeUnsupportedError, match="do not run in the reference runtime") as info:
        draft_config(spec)
    assert remedy in str(info.value) and "\n" not in str(info.value)


def test_published_assistant_config_builds_the_published_tensors():
    """The published config with its defaults gives modules whose parameters are the published header's
    58 tensors, name for name (encoder.* -> fc / hidden_norm) and shape for shape."""
    raw = json.loads((FIXTURES / "assistant-config.json").read_text())
    cfg = draft_config(parse_draft_config(raw, "published"))
    assert cfg.layer_causal == (False,) * 5 and cfg.layer_window == (2048,) * 5 and cfg.window_inclusive
    assert (cfg.rope_theta, cfg.rms_norm_eps, cfg.num_kv_heads, cfg.head_dim) == (500000.0, 1e-5, 8, 128)
    assert cfg.vocab_size is None and not cfg.attention_bias and cfg.target_layer_ids == (1, 13, 25, 37, 49)
    header = json.loads((FIXTURES / "assistant-safetensors-header.json").read_text())
    published = {normalise_key(k): v["shape"] for k, v in header.items() if k != "__metadata__"}
    ours = {k: list(v.shape) for k, v in torch_draft.build_draft(cfg, raw).state_dict().items()}
    assert len(published) == 58 and ours == published


def test_assistant_defaults_fill_what_the_config_leaves_out():
    raw = json.loads((FIXTURES / "assistant-config.json").read_text())
    for key in ("layer_types", "sliding_window", "rope_parameters", "rms_norm_eps", "block_size", "mask_token_id"):
        raw.pop(key)
    cfg = draft_config(parse_draft_config(raw, "sparse"))
    # MuseGlimmerAssistantConfig defaults (configuration_muse_glimmer_assistant.py:52, 70, 73, 81-87)
    assert cfg.layer_window == (2048,) * 5 and cfg.layer_causal == (False,) * 5
    assert (cfg.rope_theta, cfg.rms_norm_eps, cfg.block_size, cfg.mask_token_id) == (500000.0, 1e-5, 16, 201818)


def test_a_causal_assistant_config_is_refused():
    raw = dict(json.loads((FIXTURES / "assistant-config.json").read_text()), is_causal=True)
    with pytest.raises(RuntimeUnsupportedError, match="transformers ignores it"):
        draft_config(parse_draft_config(raw, "causal"))


def test_two_spellings_of_one_tensor_are_refused(qwen, tmp_path):
    _, _, tcfg = qwen
    cfg = assistant_config(tcfg)
    state = assistant_state(cfg, 1)
    state["fc.weight"] = state["encoder.fc.weight"].clone()
    folder = save_draft(tmp_path / "both", cfg, state)
    with pytest.raises(WeightsError, match="two tensors stand for fc.weight"):
        torch_draft.load_draft(folder)
