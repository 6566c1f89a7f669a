"""The deep probes on hostile folders: an index naming pickled shards is reported, never opened; third-party
code that prints or calls sys.exit() becomes a skipped fact, never a silent exit 1 (issues 12, 15)."""

from __future__ import annotations

import json
import sys

import pytest

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.modelfacts import Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import parse_target_config
from tests.configs import draft, target, write_model
from tests.deep_helpers import write_safetensors


def _index(folder, weight_map):
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def test_an_index_naming_pickled_shards_is_reported_and_never_opened(tmp_path, monkeypatch):
    import dflash_compat.files.safetensors_header as sh
    from dflash_compat.inspection import inspect_draft

    d = write_model(tmp_path / "d", draft())
    write_safetensors(d / "model-1.safetensors", {"fc.weight": ("BF16", [4, 4])})
    (d / "pytorch_model-2.bin").write_bytes(b"\x80\x04 a pickle")
    _index(d, {"fc.weight": "model-1.safetensors", "layers.0.x": "pytorch_model-2.bin"})
    real = sh.read_header
    monkeypatch.setattr(sh, "read_header", lambda path, name=None: (
        pytest.fail(f"opened {path}") if not str(path).endswith(".safetensors") else real(path, name)))
    facts = inspect_draft(Resolved(ref="d", folder=d))
    assert isinstance(facts, Skipped) and facts.reason == "pickle-shards"
    assert "pytorch_model-2.bin" in facts.detail
    with pytest.raises(Exception, match="never opened"):  # any other reader of the index refuses it too
        sh.read_local_headers(d)


def test_the_check_reports_pickled_shards_as_a_finding(tmp_path, monkeypatch):
    import dflash_compat.inspection as probe
    from dflash_compat.pipeline.check import CheckRequest, run_check

    t = write_model(tmp_path / "t", target())
    d = write_model(tmp_path / "d", draft())
    (d / "pytorch_model.bin").write_bytes(b"\x80\x04 a pickle")
    _index(d, {"fc.weight": "pytorch_model.bin"})
    # the target's build is not what this test is about (and costs seconds): skip it
    monkeypatch.setattr(probe, "inspect_target", lambda *a, **k: Skipped("torch-missing", "not needed here"))
    report = run_check(CheckRequest(target=str(t), draft=str(d), backends=["vllm"]))
    [f] = [f for f in report.findings if f.code == "DF007"]
    assert "pickled" in f.message


def test_foreign_exit_and_prints_become_a_skip(tmp_path, monkeypatch, capsys):
    import dflash_compat.inspection.torch_meta as torch_meta
    from dflash_compat.inspection import inspect_target

    def rude(*args):
        print("To run this model install something")
        sys.exit(1)

    monkeypatch.setattr(torch_meta, "inspect_torch_target", rude)
    raw = target()
    facts = inspect_target(Resolved(ref="t", folder=tmp_path), parse_target_config(raw, "t"), CheckOptions(),
                           framework="torch")
    assert isinstance(facts, Skipped) and facts.reason == "inspection-failed"
    assert "sys.exit(1): To run this model install something" in facts.detail
    assert capsys.readouterr().out == ""


def test_mlx_lm_olmo_without_its_package_is_not_buildable_not_an_exit(tmp_path, capsys):
    pytest.importorskip("mlx_lm")
    pytest.importorskip("mlx.core")
    try:
        import hf_olmo  # noqa: F401
        pytest.skip("hf_olmo is installed: mlx-lm builds olmo")
    except ImportError:
        pass
    from dflash_compat.inspection import inspect_target

    raw = {"model_type": "olmo", "architectures": ["OlmoForCausalLM"], "d_model": 64, "n_layers": 2, "n_heads": 4,
           "vocab_size": 128, "embedding_size": 128, "mlp_ratio": 2}
    (tmp_path / "config.json").write_text(json.dumps(raw))
    facts = inspect_target(Resolved(ref="t", folder=tmp_path, files={"config.json": tmp_path / "config.json"}),
                           parse_target_config(raw, "t"), CheckOptions(), framework="mlx")
    assert facts.mlx is not None and facts.mlx.supported is False
    assert "sys.exit(1)" in facts.mlx.error and "ai2-olmo" in facts.mlx.error
    assert capsys.readouterr().out == ""
