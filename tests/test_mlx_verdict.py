"""The tie-aware verdict and the report's runtime fields on the MLX runtime (mirrors of the torch ones,
tests/test_runtime_kernels.py): a broken rollback is `differs`, with margins measured by MLX's own
divergence_margins; the report names MLX's one attention kernel and the greedy-loop baseline."""

from __future__ import annotations

import pytest

pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.cli.commands.smoke import SmokeRequest, SmokeRun, build_payload, exit_code, run_prompts  # noqa: E402
from dflash_compat.exceptions import InputError  # noqa: E402
from dflash_compat.runtime import mlx_generate as rt  # noqa: E402
from dflash_compat.runtime import mlx_target  # noqa: E402
from dflash_compat.runtime.mlx_draft import load_draft  # noqa: E402
from tests.mlx_models import build_target, draft_config, save_draft, target_config  # noqa: E402

PROMPT = [5, 7, 9, 11, 3, 2, 8, 4, 6]


def _pair(tmp_path):
    cfg = target_config("qwen3")
    model = build_target(cfg, seed=0)
    folder = save_draft(tmp_path / "d", draft_config(cfg, layer_ids=(0, 2), block_size=4, layers=1), seed=10)
    return rt.target_for(model, cfg), load_draft(folder)


def _run(target, draft):
    req = SmokeRequest(target="t", draft="d", prompt_ids=[PROMPT], max_new_tokens=24)
    bs, runs = run_prompts(rt, draft, target, [PROMPT], req, lambda: None, lambda n: None)
    return build_payload(SmokeRun("mlx", "cpu", "float32", bs, runs), 0.0)


def test_mlx_report_names_its_kernel_and_baseline(tmp_path):
    payload = _run(*_pair(tmp_path))
    assert payload["runtime"]["attention"] == rt.ATTENTION_LABEL and payload["runtime"]["cache"] == "dynamic"
    assert payload["runtime"]["baseline"] == "greedy-loop" and list(payload["runtime"]["baselines_tokens_per_s"]) \
        == ["greedy-loop"]
    assert payload["summary"]["verdict"] == "lossless" and payload["results"][0]["generate_tokens_per_s"] is None


def test_mlx_broken_rollback_differs_with_margins(tmp_path, monkeypatch):
    target, draft = _pair(tmp_path)
    real = mlx_target.cut_entry
    monkeypatch.setattr(mlx_target, "cut_entry", lambda entry, n: real(entry, n - 1))  # one rejected token stays
    payload = _run(target, draft)
    r = payload["results"][0]
    assert r["verdict"] == "differs" and exit_code(payload, None) == 1
    div = r["divergence"]
    assert div["gap"] > div["tolerance"] and div["block"]["top1"] == div["single"]["top1"] == div["baseline_token"]


def test_mlx_refuses_torch_only_options(tmp_path):
    target, draft = _pair(tmp_path)
    for kw in (dict(attention="flash"), dict(cache="static"), dict(graphs=True)):
        with pytest.raises(InputError):
            rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, **kw)
