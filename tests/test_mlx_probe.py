"""MLX target inspection (probe/mlx_tree.py) on tiny mlx-lm configs, and the MLX module rules DF510-DF513."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

from dflash_compat.checker import RuleContext, run_rules  # noqa: E402
from dflash_compat.deployment.options import CheckOptions  # noqa: E402
from dflash_compat.inspection.mlx_build import looks_like_mlx_model  # noqa: E402
from dflash_compat.inspection.mlx_tree import inspect_mlx_target  # noqa: E402
from dflash_compat.modelfacts import ModuleFacts, Skipped  # noqa: E402
from dflash_compat.pipeline.check import load_target  # noqa: E402
from dflash_compat.resolve.refs import resolve  # noqa: E402
from dflash_compat.rules import RULES_BY_CODE  # noqa: E402
from dflash_compat.specs import parse_draft_config  # noqa: E402
from tests.mlx_models import build_target, draft_config, save_target, target_config, write_config  # noqa: E402


def inspect(tmp_path, name_or_cfg, **changes):
    """(target spec, its mlx-lm module facts)."""
    cfg = target_config(name_or_cfg, **changes) if isinstance(name_or_cfg, str) else name_or_cfg
    folder = write_config(tmp_path / "target", cfg)
    resolved = resolve(str(folder), "target")
    return load_target(resolved), inspect_mlx_target(resolved, CheckOptions())


def catches(code, inspected, draft_cfg=None):
    target_spec, modules = inspected
    draft = parse_draft_config(draft_cfg or draft_config(target_spec.raw), "draft")
    ctx = RuleContext(target=target_spec, draft=draft, modules=modules)
    return [f for f in run_rules(ctx, [RULES_BY_CODE[code]], ["mlx"]) if f.code == code]


# ---- inspection --------------------------------------------------------------------------


def test_qwen3_paths_and_caches(tmp_path):
    _, m = inspect(tmp_path, "qwen3")
    assert m.notes == ()
    assert (m.paths.embed, m.paths.head, m.paths.layers) == ("model.embed_tokens", "lm_head", "model.layers")
    assert m.paths.tied is False and m.layer_returns.kind == "tensor" and m.cache.rollback == "crop"
    assert m.cache.layers == ("KVCache",) * 4
    assert m.framework == "mlx" and m.paths.layers_len == 4
    ref = m.mlx.reference_paths
    assert (ref.embed, ref.head, ref.layers) == ("model.embed_tokens", "lm_head", "model.layers")
    assert m.forward.accepts[:2] == ("inputs", "cache")


def test_tied_head_is_the_embedding_as_linear(tmp_path):
    _, m = inspect(tmp_path, "qwen3_tied")
    assert m.paths.tied is True and m.paths.head == "model.embed_tokens.as_linear"


def test_qwen3_5_language_model_nesting_and_replay(tmp_path):
    _, m = inspect(tmp_path, "qwen3_5")
    assert m.paths.head == "language_model.lm_head" and m.paths.embed == "model.embed_tokens"
    assert m.cache.layers == ("ArraysCache", "KVCache", "ArraysCache", "KVCache")
    assert m.cache.rollback == "replay" and m.mlx.runtime_rollback == "replay"
    assert {c.module for c in m.mlx.caches} == {"mlx_lm.models.qwen3_5.GatedDeltaNet", None}


def test_qwen3_next_is_replayable_by_us_only(tmp_path):
    _, m = inspect(tmp_path, "qwen3_next")
    assert m.cache.rollback == "none" and m.mlx.runtime_rollback == "replay"


@pytest.mark.parametrize("name,kinds", [
    ("llama_swa", ["RotatingKVCache", "KVCache", "RotatingKVCache", "RotatingKVCache"]),
    ("gemma3_text", ["RotatingKVCache", "KVCache", "RotatingKVCache", "KVCache"]),
])
def test_sliding_window_caches(tmp_path, name, kinds):
    _, m = inspect(tmp_path, name)
    assert list(m.cache.layers) == kinds and m.cache.rollback == "crop"
    assert {c.window for c in m.mlx.caches if c.kind == "RotatingKVCache"} == {4}


def test_other_recurrent_cache_cannot_be_rolled_back(tmp_path):
    _, m = inspect(tmp_path, "lfm2")
    assert m.cache.rollback == "none" and m.mlx.runtime_rollback == "none"
    assert "mlx_lm.models.lfm2.ShortConv" in {c.module for c in m.mlx.caches}


def test_layouts_the_reference_cannot_reach(tmp_path):
    _, m = inspect(tmp_path, "internlm2")  # model.tok_embeddings, head `output`
    assert m.paths.embed == "model.tok_embeddings" and m.paths.head == "output"
    assert m.mlx.reference_paths.embed is None
    _, m = inspect(tmp_path, "llama4_text")  # embed found, untied head at `output`
    assert m.paths.head == "output"
    assert m.mlx.reference_paths.head == "model.embed_tokens.as_linear"  # what it falls back to


def test_tuple_returning_layers(tmp_path):
    _, m = inspect(tmp_path, "hunyuan")
    assert m.layer_returns.kind == "tuple" and m.layer_returns.by_class == {"DecoderLayer": "tuple"}


def test_quantized_model_is_read(tmp_path):
    _, m = inspect(tmp_path, "qwen3", quantization={"group_size": 32, "bits": 4})
    assert m.notes == () and m.mlx.quantization == {"bits": 4, "group_size": 32}
    assert m.mlx.embed_quantized and m.mlx.head_quantized and m.paths.head_class == "QuantizedLinear"


def test_quantized_modules_from_weight_headers(tmp_path):
    import mlx.nn as nn

    cfg = target_config("qwen3", quantization={"group_size": 32, "bits": 4})
    model = build_target("qwen3")
    nn.quantize(model, group_size=32, bits=4, class_predicate=lambda p, m: isinstance(m, nn.Linear) and p != "lm_head")
    folder = save_target(tmp_path / "q", model, cfg)
    resolved = resolve(str(folder), "target")
    m = inspect_mlx_target(resolved, CheckOptions())
    assert m.mlx.weights_read is True
    assert (m.mlx.embed_quantized, m.mlx.head_quantized) == (False, False)
    assert looks_like_mlx_model(folder)


def test_unknown_model_type_is_recorded_not_raised(tmp_path):
    _, m = inspect(tmp_path, dict(target_config("qwen3"), model_type="no_such_arch"))
    assert m.mlx.supported is False and "no_such_arch" in m.mlx.error
    assert m.notes and m.paths is None


def test_custom_model_file_needs_trust(tmp_path):
    inspected = inspect(tmp_path, dict(target_config("qwen3"), model_file="my_model.py"))
    m = inspected[1]
    assert isinstance(m, Skipped) and (m.reason, m.framework) == ("remote-code", "mlx")
    assert "--trust-remote-code" in m.note
    (df006,) = catches("DF006", inspected)
    assert "--trust-remote-code" in df006.message
    (df001,) = catches("DF001", inspected)
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
        inspect_mlx_target(resolved, CheckOptions(trust_remote_code=True))
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
        inspect_mlx_target(resolved, CheckOptions(trust_remote_code=True))
    assert not marker.exists()


def test_trusted_model_file_writes_no_bytecode_into_the_folder(tmp_path):
    import sys

    folder = write_config(tmp_path / "target", dict(target_config("qwen3"), model_file="my_model.py"))
    (folder / "my_model.py").write_text("from mlx_lm.models.qwen3 import Model, ModelArgs\n")
    resolved = resolve(str(folder), "target")
    before = sys.dont_write_bytecode
    m = inspect_mlx_target(resolved, CheckOptions(trust_remote_code=True))
    assert isinstance(m, ModuleFacts) and m.paths.layers == "model.layers"
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
    _, m = inspect(tmp_path, dict(QWEN3_8B))
    assert m.paths.layers == "model.layers" and m.paths.layers_len == 36
    assert mx.get_active_memory() - before < 64 * 2**20  # lazily built: nothing of its 16 GB materialised


# ---- rules ---------------------------------------------------------------------------------


def test_df510_catches_unbuildable_target(tmp_path):
    assert catches("DF510", inspect(tmp_path, dict(target_config("qwen3"), model_type="no_such_arch")))


def test_df510_passes_buildable_target(tmp_path):
    assert not catches("DF510", inspect(tmp_path, "qwen3"))


def test_df511_notes_gated_delta_net_replay(tmp_path):
    found = catches("DF511", inspect(tmp_path, "qwen3_5"))
    assert found and found[0].severity == "info" and "normalize_qk" in found[0].message


def test_df511_silent_for_attention_and_other_recurrent_targets(tmp_path):
    assert not catches("DF511", inspect(tmp_path, "qwen3"))
    assert not catches("DF511", inspect(tmp_path, "qwen3_next"))  # DF706 / DF504 report it


def test_df512_catches_embed_scale_attribute(tmp_path):
    found = catches("DF512", inspect(tmp_path, "gemma4_text"))
    assert found and "model.embed_scale" in found[0].message and "5.65685" in found[0].message


def test_df512_passes_raw_embeddings(tmp_path):
    assert not catches("DF512", inspect(tmp_path, "gemma3_text"))  # Gemma 3 scales in code: DF121's case
    assert not catches("DF512", inspect(tmp_path, "qwen3"))


def test_df513_catches_mlx_quantized_draft(tmp_path):
    t = inspect(tmp_path, "qwen3")
    found = catches("DF513", t, draft_config(t[0].raw, quantization={"group_size": 64, "bits": 4}))
    assert found and "near-zero acceptance" in found[0].message


def test_df513_passes_float_draft(tmp_path):
    t = inspect(tmp_path, "qwen3")
    assert not catches("DF513", t)
    assert not catches("DF513", t, draft_config(t[0].raw, quantization_config={"quant_method": "fp8"}))  # DF123's


def test_check_cli_with_framework_mlx(tmp_path):
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    cfg = target_config("gemma4_text")
    target = write_config(tmp_path / "t", cfg)
    draft = write_config(tmp_path / "d", draft_config(cfg, quantization={"group_size": 64, "bits": 4}))
    result = CliRunner().invoke(cli, ["check", str(target), "--draft", str(draft), "--backend", "mlx",
                                      "--framework", "mlx", "--format", "json"])
    report = json.loads(result.output)
    codes = {f["code"] for f in report["findings"]}
    assert {"DF512", "DF513"} <= codes
    assert report["target"]["deep"]["framework"] == "mlx"


def test_framework_mlx_shows_transformers_module_rules_as_not_run(tmp_path, monkeypatch):
    from xml.etree import ElementTree as ET

    from dflash_compat.emitters import get_renderer
    from dflash_compat.pipeline.check import CheckRequest, run_check

    cfg = target_config("qwen3")
    write_config(tmp_path / "t", cfg)
    write_config(tmp_path / "d", draft_config(cfg))
    monkeypatch.chdir(tmp_path)  # short paths: a temporary folder's own name may exceed 80 columns
    report = run_check(CheckRequest(target="./t", draft="./d", framework="mlx"))
    junit = ET.fromstring(get_renderer("junit")(report))
    case = next(c for c in junit.iter("testcase") if c.get("name").startswith("DF251"))
    assert "inspected with mlx-lm, not transformers" in case.find("skipped").get("message")
    mlx_case = next(c for c in junit.iter("testcase") if c.get("name").startswith("DF510"))
    assert mlx_case.find("skipped") is None  # an MLX module rule did run
    text = get_renderer("text")(report)  # 80 columns, a CI log's width
    assert "not run, the target's modules were inspected with mlx-lm, not transformers:" in text
    assert max(len(line) for line in text.splitlines()) <= 80 and "DF251" in text.split("not run, ")[1]
    statuses = {r["code"]: (r["status"], r["missing"]) for r in json.loads(get_renderer("json")(report))["rules"]}
    assert statuses["DF251"] == ("skipped", "torch-modules") and statuses["DF510"] == ("ran", None)
