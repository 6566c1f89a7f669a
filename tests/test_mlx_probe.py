"""MLX target inspection (probe/mlx_tree.py) on tiny mlx-lm configs, and the MLX module rules DF510-DF513."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.check import load_target  # noqa: E402
from dflash_compat.engine import CheckContext, CheckOptions, run_rules  # noqa: E402
from dflash_compat.probe.mlx_tree import inspect_mlx_target, looks_like_mlx_model  # noqa: E402
from dflash_compat.resolve import resolve  # noqa: E402
from dflash_compat.rules import RULES_BY_CODE  # noqa: E402
from dflash_compat.specs import parse_draft_config  # noqa: E402
from tests.mlx_models import build_target, draft_config, save_target, target_config, write_config  # noqa: E402


def inspect(tmp_path, name_or_cfg, **changes):
    cfg = target_config(name_or_cfg, **changes) if isinstance(name_or_cfg, str) else name_or_cfg
    folder = write_config(tmp_path / "target", cfg)
    resolved = resolve(str(folder), "target")
    spec, notes = load_target(resolved), []
    inspect_mlx_target(resolved, spec, CheckOptions(), notes)
    return spec, notes


def catches(code, target_spec, draft_cfg=None):
    target_cfg = target_spec.raw
    draft = parse_draft_config(draft_cfg or draft_config(target_cfg), "draft")
    return [f for f in run_rules(CheckContext(target=target_spec, draft=draft), [RULES_BY_CODE[code]], ["mlx"])
            if f.code == code]


# ---- inspection --------------------------------------------------------------------------


def test_qwen3_paths_and_caches(tmp_path):
    t, notes = inspect(tmp_path, "qwen3")
    assert notes == []
    assert (t.embed_path, t.lm_head_path, t.layers_path) == ("model.embed_tokens", "lm_head", "model.layers")
    assert t.tied_embeddings is False and t.layer_returns == "tensor" and t.rollback == "crop"
    assert t.cache_layers == ["KVCache"] * 4
    assert t.deep["framework"] == "mlx" and t.deep["layers_len"] == 4
    assert t.deep["mlx"]["reference_paths"] == {"embed": "model.embed_tokens", "head": "lm_head", "layers": "model.layers"}
    assert t.forward_accepts[:2] == ["inputs", "cache"]


def test_tied_head_is_the_embedding_as_linear(tmp_path):
    t, _ = inspect(tmp_path, "qwen3_tied")
    assert t.tied_embeddings is True and t.lm_head_path == "model.embed_tokens.as_linear"


def test_qwen3_5_language_model_nesting_and_replay(tmp_path):
    t, _ = inspect(tmp_path, "qwen3_5")
    assert t.lm_head_path == "language_model.lm_head" and t.embed_path == "model.embed_tokens"
    assert t.cache_layers == ["ArraysCache", "KVCache", "ArraysCache", "KVCache"]
    assert t.rollback == "replay" and t.deep["mlx"]["runtime_rollback"] == "replay"
    assert {c.get("module") for c in t.deep["mlx"]["caches"]} == {"mlx_lm.models.qwen3_5.GatedDeltaNet", None}


def test_qwen3_next_is_replayable_by_us_only(tmp_path):
    t, _ = inspect(tmp_path, "qwen3_next")
    assert t.rollback == "none" and t.deep["mlx"]["runtime_rollback"] == "replay"


@pytest.mark.parametrize("name,kinds", [
    ("llama_swa", ["RotatingKVCache", "KVCache", "RotatingKVCache", "RotatingKVCache"]),
    ("gemma3_text", ["RotatingKVCache", "KVCache", "RotatingKVCache", "KVCache"]),
])
def test_sliding_window_caches(tmp_path, name, kinds):
    t, _ = inspect(tmp_path, name)
    assert t.cache_layers == kinds and t.rollback == "crop"
    assert {c.get("window") for c in t.deep["mlx"]["caches"] if c["kind"] == "RotatingKVCache"} == {4}


def test_other_recurrent_cache_cannot_be_rolled_back(tmp_path):
    t, _ = inspect(tmp_path, "lfm2")
    assert t.rollback == "none" and t.deep["mlx"]["runtime_rollback"] == "none"
    assert "mlx_lm.models.lfm2.ShortConv" in {c.get("module") for c in t.deep["mlx"]["caches"]}


def test_layouts_the_reference_cannot_reach(tmp_path):
    t, _ = inspect(tmp_path, "internlm2")  # model.tok_embeddings, head `output`
    assert t.embed_path == "model.tok_embeddings" and t.lm_head_path == "output"
    assert t.deep["mlx"]["reference_paths"]["embed"] is None
    t, _ = inspect(tmp_path, "llama4_text")  # embed found, untied head at `output`
    assert t.lm_head_path == "output"
    assert t.deep["mlx"]["reference_paths"]["head"] == "model.embed_tokens.as_linear"  # what it falls back to


def test_tuple_returning_layers(tmp_path):
    t, _ = inspect(tmp_path, "hunyuan")
    assert t.layer_returns == "tuple" and t.deep["layer_returns_by_class"] == {"DecoderLayer": "tuple"}


def test_quantized_model_is_read(tmp_path):
    t, notes = inspect(tmp_path, "qwen3", quantization={"group_size": 32, "bits": 4})
    facts = t.deep["mlx"]
    assert notes == [] and facts["quantization"] == {"bits": 4, "group_size": 32}
    assert facts["quantized"] == {"embed": True, "head": True} and facts["head_class"] == "QuantizedLinear"


def test_quantized_modules_from_weight_headers(tmp_path):
    import mlx.nn as nn

    cfg = target_config("qwen3", quantization={"group_size": 32, "bits": 4})
    model = build_target("qwen3")
    nn.quantize(model, group_size=32, bits=4, class_predicate=lambda p, m: isinstance(m, nn.Linear) and p != "lm_head")
    folder = save_target(tmp_path / "q", model, cfg)
    resolved = resolve(str(folder), "target")
    t = load_target(resolved)
    inspect_mlx_target(resolved, t, CheckOptions(), [])
    assert t.deep["mlx"]["weights_read"] is True
    assert t.deep["mlx"]["quantized"] == {"embed": False, "head": False}
    assert looks_like_mlx_model(folder)


def test_unknown_model_type_is_recorded_not_raised(tmp_path):
    t, notes = inspect(tmp_path, dict(target_config("qwen3"), model_type="no_such_arch"))
    assert t.deep["mlx"]["supported"] is False and "no_such_arch" in t.deep["mlx"]["error"]
    assert notes and t.layers_path is None


def test_custom_model_file_needs_trust(tmp_path):
    t, notes = inspect(tmp_path, dict(target_config("qwen3"), model_file="my_model.py"))
    assert any("--trust-remote-code" in n for n in notes)
    assert t.deep["inspected"] is False and t.deep["skipped"] == "remote-code" and t.deep["framework"] == "mlx"
    (df006,) = catches("DF006", t)
    assert "--trust-remote-code" in df006.message
    (df001,) = catches("DF001", t)
    assert "model_file" in df001.message


@pytest.mark.parametrize("model_file", ["../evil.py", "ABSOLUTE", "sub/evil.py", "evil.txt", ".evil.py", 3])
def test_model_file_outside_the_folder_is_refused(tmp_path, model_file):
    from dflash_compat.exceptions import RemoteCodeError

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (tmp_path / "target" / "sub").mkdir(parents=True)
    (tmp_path / "target" / "sub" / "evil.py").write_text(evil.read_text())
    (tmp_path / "target" / "evil.txt").write_text(evil.read_text())
    cfg = dict(target_config("qwen3"), model_file=str(evil) if model_file == "ABSOLUTE" else model_file)
    folder = write_config(tmp_path / "target", cfg)
    resolved = resolve(str(folder), "target")
    with pytest.raises(RemoteCodeError) as err:
        inspect_mlx_target(resolved, load_target(resolved), CheckOptions(trust_remote_code=True), [])
    assert "\n" not in str(err.value) and err.value.exit_code == 2
    assert not marker.exists()


def test_model_file_link_out_of_the_folder_is_refused(tmp_path):
    from dflash_compat.exceptions import RemoteCodeError

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    folder = write_config(tmp_path / "target", dict(target_config("qwen3"), model_file="model.py"))
    (folder / "model.py").symlink_to(evil)
    resolved = resolve(str(folder), "target")
    with pytest.raises(RemoteCodeError):
        inspect_mlx_target(resolved, load_target(resolved), CheckOptions(trust_remote_code=True), [])
    assert not marker.exists()


def test_trusted_model_file_writes_no_bytecode_into_the_folder(tmp_path):
    import sys

    folder = write_config(tmp_path / "target", dict(target_config("qwen3"), model_file="my_model.py"))
    (folder / "my_model.py").write_text("from mlx_lm.models.qwen3 import Model, ModelArgs\n")
    resolved = resolve(str(folder), "target")
    before = sys.dont_write_bytecode
    t = load_target(resolved)
    inspect_mlx_target(resolved, t, CheckOptions(trust_remote_code=True), [])
    assert t.deep["inspected"] and t.layers_path == "model.layers"
    assert not (folder / "__pycache__").exists() and sys.dont_write_bytecode is before


def test_looks_like_mlx_model(tmp_path):
    hf = write_config(tmp_path / "hf", target_config("qwen3"))
    assert not looks_like_mlx_model(hf)
    assert looks_like_mlx_model(hf, repo_id="mlx-community/Qwen3-8B-4bit")
    q = write_config(tmp_path / "q", target_config("qwen3", quantization={"bits": 4, "group_size": 64}))
    assert looks_like_mlx_model(q)
    mlx_weights = save_target(tmp_path / "w", build_target("qwen3"), target_config("qwen3"))
    assert looks_like_mlx_model(mlx_weights)
    assert not looks_like_mlx_model(tmp_path / "missing")


def test_inspection_does_not_evaluate_a_large_model(tmp_path):
    import mlx.core as mx

    from tests.configs import QWEN3_8B

    before = mx.get_active_memory()
    t, _ = inspect(tmp_path, dict(QWEN3_8B))
    assert t.layers_path == "model.layers" and t.deep["layers_len"] == 36
    assert mx.get_active_memory() - before < 64 * 2**20  # lazily built: nothing of its 16 GB materialised


# ---- rules ---------------------------------------------------------------------------------


def test_df510_catches_unbuildable_target(tmp_path):
    t, _ = inspect(tmp_path, dict(target_config("qwen3"), model_type="no_such_arch"))
    assert catches("DF510", t)


def test_df510_passes_buildable_target(tmp_path):
    assert not catches("DF510", inspect(tmp_path, "qwen3")[0])


def test_df511_notes_gated_delta_net_replay(tmp_path):
    found = catches("DF511", inspect(tmp_path, "qwen3_5")[0])
    assert found and found[0].severity == "info" and "normalize_qk" in found[0].message


def test_df511_silent_for_attention_and_other_recurrent_targets(tmp_path):
    assert not catches("DF511", inspect(tmp_path, "qwen3")[0])
    assert not catches("DF511", inspect(tmp_path, "qwen3_next")[0])  # DF706 / DF504 report it


def test_df512_catches_embed_scale_attribute(tmp_path):
    t, _ = inspect(tmp_path, "gemma4_text")
    found = catches("DF512", t)
    assert found and "model.embed_scale" in found[0].message and "5.65685" in found[0].message


def test_df512_passes_raw_embeddings(tmp_path):
    assert not catches("DF512", inspect(tmp_path, "gemma3_text")[0])  # Gemma 3 scales in code: DF121's case
    assert not catches("DF512", inspect(tmp_path, "qwen3")[0])


def test_df513_catches_mlx_quantized_draft(tmp_path):
    t, _ = inspect(tmp_path, "qwen3")
    found = catches("DF513", t, draft_config(t.raw, quantization={"group_size": 64, "bits": 4}))
    assert found and "near-zero acceptance" in found[0].message


def test_df513_passes_float_draft(tmp_path):
    t, _ = inspect(tmp_path, "qwen3")
    assert not catches("DF513", t)
    assert not catches("DF513", t, draft_config(t.raw, quantization_config={"quant_method": "fp8"}))  # DF123's


def test_check_cli_with_framework_mlx(tmp_path):
    from click.testing import CliRunner

    from dflash_compat.cli import cli

    cfg = target_config("gemma4_text")
    target = write_config(tmp_path / "t", cfg)
    draft = write_config(tmp_path / "d", draft_config(cfg, quantization={"group_size": 64, "bits": 4}))
    result = CliRunner().invoke(cli, ["check", str(target), "--draft", str(draft), "--backend", "mlx",
                                      "--framework", "mlx", "--format", "json"])
    report = json.loads(result.output)
    codes = {f["code"] for f in report["findings"]}
    assert {"DF512", "DF513"} <= codes
    assert report["target"]["deep"]["framework"] == "mlx"
