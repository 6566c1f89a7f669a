"""Deep rules (DF006-DF008, DF25x, DF351, DF6xx, DF7xx): each catches its case and passes the good one,
and whole checks give the right findings per backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dflash_compat.checker import RuleContext, check_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.modelfacts import Skipped
from dflash_compat.pipeline.check import CheckRequest, run_check
from dflash_compat.rules import RULES_BY_CODE
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.deep_helpers import (
    TINY,
    catches,
    draft_tensors,
    findings,
    probe,
    read_draft,
    tiny_draft,
    tweak,
    write_draft,
    write_safetensors,
)

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401

    HAVE_TORCH = True
except ImportError:  # pragma: no cover - the test environment has the torch extra
    HAVE_TORCH = False
torch_required = pytest.mark.skipif(not HAVE_TORCH, reason="needs the torch extra")

DRAFT = tiny_draft(TINY["qwen3"])
WEIGHT_CODES = [f"DF6{i:02d}" for i in range(1, 11)]


def _target():
    return parse_target_config(TINY["qwen3"], "t")


def weights(tmp_path: Path, cfg=None, tensors=None, data="garbage"):
    cfg = cfg or DRAFT
    return read_draft(write_draft(tmp_path, cfg, tensors if tensors is not None else draft_tensors(cfg), data=data))


def bent(cfg=None, drop=(), **changes):
    """The conforming tensor table of `cfg` with some tensors dropped or given (dtype, shape)."""
    t = draft_tensors(cfg or DRAFT)
    for name in drop:
        t.pop(name)
    t.update(changes)
    return t


# --- DF6xx: draft weights ------------------------------------------------------------------------------------


def test_conforming_draft_passes_every_weight_rule(tmp_path):
    d = weights(tmp_path)
    assert [f.code for code in WEIGHT_CODES for f in findings(code, _target(), *d)] == []


def test_df601_catches_wrong_fc_shape(tmp_path):
    d = weights(tmp_path, tensors=bent(**{"fc.weight": ("BF16", [64, 192])}))
    (f,) = findings("DF601", _target(), *d)
    assert "trained on 3 target layers, the config lists 2" in f.message
    assert f.locations[0].key == "fc.weight" and f.locations[0].file == "model.safetensors"


def test_df602_catches_a_missing_layer(tmp_path):
    cfg = tiny_draft(TINY["qwen3"], num_hidden_layers=3)
    d = weights(tmp_path, cfg=cfg, tensors=draft_tensors(DRAFT))  # weights of 2 layers, config says 3
    (f,) = findings("DF602", _target(), *d)
    assert "layer(s) [2] missing" in f.message


def test_df602_catches_a_gap_in_the_layers(tmp_path):
    cfg = tiny_draft(TINY["qwen3"], num_hidden_layers=3)
    t = {k: v for k, v in draft_tensors(cfg).items() if not k.startswith("layers.1.")}
    assert catches("DF602", _target(), *weights(tmp_path, cfg=cfg, tensors=t))


def test_df603_catches_a_missing_tensor(tmp_path):
    assert catches("DF603", _target(), *weights(tmp_path, tensors=bent(drop=["hidden_norm.weight"])))


def test_df604_catches_kv_heads_mismatch(tmp_path):
    d = weights(tmp_path, tensors=bent(**{"layers.1.self_attn.k_proj.weight": ("BF16", [64, 64])}))
    (f,) = findings("DF604", _target(), *d)
    assert "layers.1.self_attn.k_proj.weight is [64, 64], the config implies [32, 64]" in f.message
    assert "num_key_value_heads" in f.message


def test_df604_catches_intermediate_size_mismatch(tmp_path):
    cfg = tiny_draft(TINY["qwen3"], intermediate_size=256)
    assert catches("DF604", _target(), *weights(tmp_path, cfg=cfg, tensors=draft_tensors(DRAFT)))


V2 = tiny_draft(TINY["qwen3"], architectures=["DFlash2DraftModel"], **{
    "dflash_config.conv_kernel_size": 4, "dflash_config.conv_group_size": 16,
    "dflash_config.selector_rank": 8, "dflash_config.selector_top_k": 4})


def v2_tensors(drop=()):
    t = draft_tensors(V2)
    for i in range(2):
        for part in ("attention_conv", "mlp_conv"):
            t[f"layers.{i}.{part}.base_kernel"] = ("BF16", [2, 4, 64])
            t[f"layers.{i}.{part}.kernel_projection.weight"] = ("BF16", [2 * 4 * 4, 64])
    t["candidate_selector.predecessor_codebook"] = ("BF16", [1000, 8])
    t["candidate_selector.successor_codebook.weight"] = ("BF16", [1000, 8])
    t["candidate_selector.hidden_projection.weight"] = ("BF16", [8, 64])
    for name in drop:
        t.pop(name)
    return t


def test_df605_passes_a_conforming_v2_draft(tmp_path):
    d = weights(tmp_path, cfg=V2, tensors=v2_tensors())
    assert d[0].format == "zlab-v2"
    assert [f.code for code in WEIGHT_CODES for f in findings(code, _target(), *d)] == []


def test_df605_catches_missing_selector(tmp_path):
    d = weights(tmp_path, cfg=V2, tensors=v2_tensors(drop=["candidate_selector.successor_codebook.weight"]))
    assert catches("DF605", _target(), *d)


def test_df605_catches_v2_tensors_under_a_v1_config(tmp_path):
    t = {k: v for k, v in v2_tensors().items()}
    (f,) = findings("DF605", _target(), *weights(tmp_path, cfg=DRAFT, tensors=t))
    assert "its loader ignores them" in f.message and "DFlash v1" in f.message


def test_df606_catches_bundled_embeddings(tmp_path):
    d = weights(tmp_path, tensors=bent(**{"embed_tokens.weight": ("BF16", [2000, 64]), "lm_head.weight": ("BF16", [2000, 64])}))
    (f,) = findings("DF606", _target(), *d)
    assert "another vocabulary" in f.message


def test_df607_catches_fp16(tmp_path):
    d = read_draft(write_draft(tmp_path, DRAFT, draft_tensors(DRAFT, dtype="F16")))
    assert catches("DF607", _target(), *d)


def test_df608_catches_undeclared_quantisation(tmp_path):
    t = bent(**{"layers.0.mlp.up_proj.weight": ("U32", [128, 8]), "layers.0.mlp.up_proj.scales": ("BF16", [128, 1])})
    assert catches("DF608", _target(), *weights(tmp_path, tensors=t))


def test_df608_leaves_declared_quantisation_to_df123(tmp_path):
    cfg = tiny_draft(TINY["qwen3"], quantization_config={"quant_method": "fp8"})
    t = bent(cfg, **{"layers.0.mlp.up_proj.weight": ("F8_E4M3", [128, 64])})
    assert not catches("DF608", _target(), *weights(tmp_path, cfg=cfg, tensors=t))


def test_df609_catches_unexpected_tensors(tmp_path):
    d = weights(tmp_path, tensors=bent(**{"midlayer.self_attn.q_proj.weight": ("BF16", [64, 64])}))
    assert catches("DF609", _target(), *d)


def test_df609_accepts_biases_and_wrapper_prefix(tmp_path):
    cfg = tiny_draft(TINY["qwen3"], attention_bias=True)
    t = {f"model.{k}": v for k, v in draft_tensors(cfg).items()}
    t["model.layers.0.self_attn.q_proj.bias"] = ("BF16", [64])
    d = weights(tmp_path, cfg=cfg, tensors=t)
    assert [f.code for code in WEIGHT_CODES for f in findings(code, _target(), *d)] == []


def test_df610_catches_a_short_data_section(tmp_path):
    d = weights(tmp_path, data="short")
    assert catches("DF610", _target(), *d)
    assert not any(catches(c, _target(), *d) for c in WEIGHT_CODES if c != "DF610")


def test_weight_rules_skip_without_headers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(DRAFT))
    d = read_draft(tmp_path)  # no safetensors at all
    assert d[1].reason == "no-safetensors"
    assert catches("DF007", _target(), *d)
    assert not any(catches(c, _target(), *d) for c in WEIGHT_CODES)


# --- DF0xx meta ----------------------------------------------------------------------------------------------


def test_df006_reports_skips():
    d = parse_draft_config(DRAFT, "d")
    assert catches("DF006", _target(), d, modules=Skipped("torch-missing", "torch is not installed", "torch"))
    assert catches("DF006", _target(), d, modules=Skipped("remote-code", "auto_map", "torch"))
    assert not catches("DF006", _target(), d)  # --no-deep: nothing to say


def test_df008_unknown_model_type_is_a_transformers_warning():
    m = Skipped("unknown-model-type", "x", framework="torch")
    found = findings("DF008", _target(), parse_draft_config(DRAFT, "d"), modules=m)
    assert {(f.backend, f.severity) for f in found} == {("transformers", "warning"), ("dflash", "warning")}


# --- module rules --------------------------------------------------------------------------------------------

D = parse_draft_config(DRAFT, "d")


def spec(name="llama", cfg=None, **changes):
    """(target spec, its module facts with `changes`, see deep_helpers.tweak)."""
    cfg = cfg or TINY[name]
    return parse_target_config(cfg, "target"), tweak(probe(cfg), **changes)


def caught(code, pair, backend=None, draft=D):
    return catches(code, pair[0], draft, modules=pair[1], backend=backend)


def found(code, pair, draft=D):
    return findings(code, pair[0], draft, modules=pair[1])


@torch_required
@pytest.mark.parametrize("code, field", [("DF701", "embed"), ("DF702", "head"), ("DF703", "layers")])
def test_df701_df703_catch_missing_modules(code, field):
    assert not caught(code, spec())
    assert caught(code, spec(**{f"paths__{field}": None}))


@torch_required
def test_df703_warns_when_the_built_layers_differ_from_the_config():
    (f,) = found("DF703", spec(paths__layers_len=3))
    assert f.severity == "warning"


@torch_required
def test_df704_catches_a_scale_the_config_does_not_show():
    t = spec(scaling__embed_scaled=True, scaling__embed_scale=48.0, scaling__embed_scale_source=("embedding.embed_scale",))
    assert caught("DF704", t)
    scaled = parse_draft_config(tiny_draft(TINY["llama"], **{"dflash_config.input_embedding_scale": 48.0}), "d")
    assert not caught("DF704", t, draft=scaled)


@torch_required
def test_df704_leaves_a_muse_glimmer_assistant_alone():
    # transformers' native path calls the target's embedding module (scale included) and reads no
    # input_embedding_scale: the assistant has nothing to mirror (a tiny BioGPT ran losslessly, zoo truth)
    t = spec(scaling__embed_scaled=True, scaling__embed_scale=8.0, scaling__embed_scale_source=("embedding.embed_scale",),
             scaling__logit_softcap=30.0)
    zlab = tiny_draft(TINY["llama"])
    assistant = {k: v for k, v in zlab.items() if k != "dflash_config"}
    assistant.update(architectures=["MuseGlimmerAssistantModel"], model_type="muse_glimmer_assistant", block_size=8,
                     mask_token_id=zlab["dflash_config"]["mask_token_id"],
                     target_layer_ids=zlab["dflash_config"]["target_layer_ids"])
    d = parse_draft_config(assistant, "d")
    assert d.format not in ("zlab-v1", "zlab-v2")
    assert caught("DF704", t) and not caught("DF704", t, draft=d)


@torch_required
def test_df704_leaves_gemma_sqrt_hidden_to_df121():
    assert not caught("DF704", spec("gemma3"))


@torch_required
def test_df704_catches_a_softcap_set_by_the_class_default():
    gemma2 = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 2, "head_dim": 16,
              "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
              "vocab_size": 1000}
    t = spec(cfg=gemma2)  # final_logit_softcapping is not in the JSON: Gemma2Config defaults it to 30.0
    assert t[0].final_logit_softcapping is None and t[1].scaling.logit_softcap == 30.0
    assert any("soft-caps its logits at 30" in f.message for f in found("DF704", t))


@torch_required
def test_df705_catches_ids_past_the_built_layers():
    (f,) = found("DF705", spec(paths__layers_len=3))  # ids [1, 2] with 3 built layers: 2 is the last
    assert f.severity == "warning" and "last" in f.message  # as DF107 judges N-1
    past, last = found("DF705", spec(paths__layers_len=2))  # 2 does not exist, 1 is the last
    assert past.severity == "error" and "[2]" in past.message and last.severity == "warning"
    assert not caught("DF705", spec())
    # a looped target (HRM: num_hidden_layers counts layer applications, transformers 5.25.0
    # configuration_hrm_text.py:45-52) is indexed by application in output_hidden_states: a warning only
    looped = dict(TINY["llama"], H_cycles=2, L_cycles=3)
    (f,) = found("DF705", spec(cfg=looped, paths__layers_len=2))
    assert f.severity == "warning" and "loops (H_cycles=2, L_cycles=3)" in f.message


@torch_required
def test_df706_mlx_recurrent_cache_the_config_did_not_flag():
    assert caught("DF706", spec(cache__non_croppable=(0,)), backend="mlx")
    assert not caught("DF706", spec("qwen3_next"))  # known hybrid: DF504's finding


@torch_required
def test_df707_only_from_a_real_mlx_tree():
    assert caught("DF707", spec(framework="mlx", cache__layers=("KVCache", "RotatingKVCache")), backend="mlx")
    # the same names from a transformers tree are not MLX's: the rule does not run on them
    torch_tree = spec(framework="torch", cache__layers=("KVCache", "RotatingKVCache"))
    assert not caught("DF707", torch_tree)
    ctx = RuleContext(target=torch_tree[0], draft=D, modules=torch_tree[1])
    (run,) = check_rules(ctx, [RULES_BY_CODE["DF707"]], ["mlx"]).rules
    assert run.status == "skipped" and run.missing == "mlx-modules"


@torch_required
def test_df708_mlx_fixed_paths():
    (f,) = found("DF708", spec("gpt2"))
    assert f.severity == "warning" and "transformer.h" in f.message  # inferred from the transformers tree
    assert not caught("DF708", spec("llama"))
    assert not caught("DF708", spec("qwen3_vl"))  # HF and mlx-vlm name wrappers differently


@torch_required
def test_df709_tuple_returning_layers():
    (f, *_) = found("DF709", spec("falcon"))
    assert f.severity == "info" and "FalconDecoderLayer" in f.message
    assert not caught("DF709", spec("llama"))


@torch_required
def test_df251_catches_a_forward_without_position_ids():
    how = dict(probe(TINY["llama"]).forward.how, position_ids="no")
    assert caught("DF251", spec(forward__how=how))
    assert not caught("DF251", spec())


@torch_required
def test_df252_catches_an_output_without_hidden_states():
    assert caught("DF252", spec(forward__output_has_hidden_states=False))
    assert not caught("DF252", spec())


@torch_required
def test_df253_catches_accessors_that_do_not_work():
    assert caught("DF253", spec(paths__embed_via="search"))
    assert not caught("DF253", spec())


@torch_required
def test_df254_past_key_values_alias():
    (f,) = found("DF254", spec())
    assert f.severity == "info" and "5.40.0" in f.message
    how = dict(probe(TINY["llama"]).forward.how, past_key_values="no")
    (f,) = found("DF254", spec(forward__how=how))
    assert f.severity == "error"


@torch_required
def test_df255_crop_semantics():
    assert caught("DF255", spec())
    assert not caught("DF255", spec(crop_semantics="absolute-length"))


@torch_required
def test_df256_recurrent_cache_layers_the_config_did_not_flag():
    assert caught("DF256", spec(cache__non_croppable=(1,)))
    assert not caught("DF256", spec("mamba"))  # known hybrid: DF201's finding
    assert not caught("DF256", spec())


@torch_required
def test_df257_sliding_window_from_a_class_default():
    mistral = {k: v for k, v in TINY["mistral"].items() if k != "sliding_window"}  # MistralConfig defaults 4096
    (f,) = found("DF257", spec(cfg=mistral))
    assert "4096" in f.message and f.severity == "warning"
    assert not caught("DF257", spec("mistral"))  # in the config: DF202's finding
    (f,) = found("DF257", spec("mistral", cache__past_recording=False))
    assert f.severity == "error"


@torch_required
def test_df258_legacy_embed_path():
    assert caught("DF258", spec("gpt2"))
    assert not caught("DF258", spec("llama"))


@torch_required
@pytest.mark.parametrize("name, expected", [("gpt_neox", True), ("opt", True), ("llama", False), ("qwen3_vl", False)])
def test_df351_vllm_shared_modules(name, expected):
    assert caught("DF351", spec(name), backend="vllm") is expected


@torch_required
def test_df351_does_not_judge_an_mlx_tree_as_vllm():
    """--framework mlx: the head at embed_tokens.as_linear is mlx-lm's tie, not a path vLLM ever sees."""
    mlx_tree = spec("llama", framework="mlx", paths__head="model.embed_tokens.as_linear")
    assert not caught("DF351", mlx_tree, backend="vllm")
    assert caught("DF351", spec("llama", paths__head="model.embed_tokens.as_linear"), backend="vllm")


# --- whole checks: the right findings per backend ------------------------------------------------------------


def _check(tmp_path: Path, name: str, draft_cfg=None):
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "config.json").write_text(json.dumps(TINY[name]))
    dcfg = draft_cfg or tiny_draft(TINY[name])
    write_draft(tmp_path / "d", dcfg)
    report = run_check(CheckRequest(target=str(tmp_path / "t"), draft=str(tmp_path / "d")))
    return report, {(f.code, f.backend) for f in report.findings}


MINE = ("DF006", "DF007", "DF008", "DF25", "DF35", "DF6", "DF7")


@torch_required
@pytest.mark.parametrize("name, expected", [
    ("qwen3", {("DF254", "dflash"), ("DF255", "dflash")}),
    ("gpt2", {("DF254", "dflash"), ("DF255", "dflash"), ("DF258", "dflash"),
              ("DF351", "vllm"), ("DF708", "mlx")}),
    ("falcon", {("DF254", "dflash"), ("DF255", "dflash"), ("DF258", "dflash"),
                ("DF351", "vllm"), ("DF708", "mlx"), ("DF709", "dflash"), ("DF709", "mlx")}),
    ("mamba", {("DF254", "dflash"), ("DF255", "dflash"), ("DF258", "dflash"), ("DF351", "vllm"),
               ("DF708", "mlx")}),
    ("qwen3_vl", {("DF254", "dflash"), ("DF255", "dflash"), ("DF258", "dflash")}),
])
def test_whole_check_findings_per_backend(tmp_path, name, expected):
    report, found = _check(tmp_path, name)
    assert {(c, b) for c, b in found if c.startswith(MINE)} == expected
    assert report.target["embed_path"] and report.target["rollback"] in ("crop", "none")
    assert report.draft["weights"]["checked"] and "shapes" not in report.draft["weights"]


@torch_required
def test_whole_check_hybrid_fails_the_reference_and_mlx(tmp_path):
    # Qwen3-Next's code records its recurrent state per step: transformers' native DFlash rolls it back from
    # 5.25.0 (refused before); the dflash reference never does
    import transformers

    report, found = _check(tmp_path, "qwen3_next")
    assert report.target["rollback"] == "none"
    assert report.summary.verdict["dflash"] == "fail" and report.summary.verdict["mlx"] == "fail"
    native = tuple(int(p) for p in transformers.__version__.split(".")[:2]) >= (5, 25)
    assert (("DF201", "transformers") in found) is not native


@torch_required
def test_whole_check_wrong_fc_fails_every_backend(tmp_path):
    cfg = tiny_draft(TINY["qwen3"])
    (tmp_path / "d").mkdir()
    write_safetensors(tmp_path / "d" / "model.safetensors", bent(cfg, **{"fc.weight": ("BF16", [64, 192])}))
    (tmp_path / "d" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps(TINY["qwen3"]))
    report = run_check(CheckRequest(target=str(tmp_path / "t"), draft=str(tmp_path / "d")))
    assert set(report.summary.verdict.values()) == {"fail"}
    assert ("DF601", "common") in {(f.code, f.backend) for f in report.findings}


def test_no_deep_keeps_config_only_behaviour(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps(TINY["qwen3"]))
    write_draft(tmp_path / "d", DRAFT, bent(**{"fc.weight": ("BF16", [64, 192])}))
    report = run_check(CheckRequest(target=str(tmp_path / "t"), draft=str(tmp_path / "d"),
                                    options=CheckOptions(deep=False)))
    assert report.target["embed_path"] is None and report.draft["weights"] is None
    assert not [f for f in report.findings if f.code.startswith(MINE)]


@torch_required
def test_df254_catches_past_key_values_swallowed_by_kwargs():
    # MambaForCausalLM.forward(cache=..., **kwargs): the alias it has is for cache_params, not past_key_values.
    (f,) = found("DF254", spec("mamba"))
    assert f.severity == "error" and "ignored" in f.message


def test_df611_catches_codebooks_spelt_with_weight(tmp_path):
    # v2_tensors() spells the successor codebook `.weight`: vLLM, the dflash MLX loader and SGLang do not load it.
    d = weights(tmp_path, cfg=V2, tensors=v2_tensors())
    found = findings("DF611", _target(), *d)
    assert {f.backend for f in found} == {"vllm", "sglang", "mlx"} and all(f.severity == "error" for f in found)
    assert all("candidate_selector.successor_codebook.weight" in f.message for f in found)
    assert "KeyError" in next(f.message for f in found if f.backend == "mlx")


def test_df611_passes_bare_codebooks_and_v1_drafts(tmp_path):
    t = v2_tensors()
    t["candidate_selector.successor_codebook"] = t.pop("candidate_selector.successor_codebook.weight")
    assert not catches("DF611", _target(), *weights(tmp_path / "bare", cfg=V2, tensors=t))
    assert not catches("DF611", _target(), *weights(tmp_path / "v1", tensors=draft_tensors(DRAFT)))


@torch_required
def test_df210_catches_a_forward_that_takes_no_cache():
    # OpenAI GPT's forward has no cache parameter, only **kwargs: the reference's past_key_values= vanishes
    # (zoo truth: dflash 0.1.0 stops on crop of an empty cache)
    how = dict(probe(TINY["llama"]).forward.how, past_key_values="untyped-kwargs")
    (f,) = found("DF210", spec(forward__how=how, forward__cache_arg=None))
    assert "takes no cache" in f.message and "is swallowed by **kwargs" in f.message
    assert not caught("DF210", spec())
    assert not caught("DF210", spec(forward__cache_arg="cache", forward__how=how))  # DF254's case
