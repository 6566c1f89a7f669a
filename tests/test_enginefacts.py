"""The engine-facts extractor: each engine's reader on a small fixture tree laid out like its wheel,
broken layouts, the refresh/--check command, and the committed data (every entry has a source)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from dflash_compat.contract import ENGINE_VERSIONS
from dflash_compat.engine import EngineSource
from dflash_compat.engine_support import draft_support, engine_data, engine_versions, source_of, sources, where
from dflash_compat.enginefacts import build, dflash, mlx, sglang, speculators, transformers, vllm
from dflash_compat.enginefacts.__main__ import main
from dflash_compat.enginefacts.source import LayoutError, SourceTree

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "enginefacts"
DIRS = {engine: FIXTURES / pkg for engine, pkg in build.PACKAGES.items()}


def tree(engine: str, root: Path | None = None) -> SourceTree:
    return SourceTree.open(root or DIRS[engine])


def loc(section, kind: str, name: str) -> tuple[str, int]:
    entry = section.sources[kind][name]
    return entry["file"], entry["line"]


# -- vLLM -------------------------------------------------------------------------------------------


def test_vllm_targets_follow_bases_aliases_and_mixins_across_modules():
    sec = vllm.extract(tree("vllm"))
    assert sec.data["supported"] == [
        "AnyVLForConditionalGeneration", "LlamaForCausalLM", "MistralForCausalLM", "OlmoForCausalLM",
        "Qwen2ForCausalLM", "ToyVLForConditionalGeneration",
    ]
    assert sec.data["unsupported"] == ["HollowVLForConditionalGeneration", "MixtralForCausalLM"]
    models = "vllm/model_executor/models"
    # the line that names SupportsEagle3 among the bases, reached through an alias and a renamed import
    assert loc(sec, "supported", "Qwen2ForCausalLM") == (f"{models}/llama.py", 13)
    assert loc(sec, "supported", "MistralForCausalLM") == (f"{models}/llama.py", 13)
    assert sec.sources["supported"]["MistralForCausalLM"]["cls"] == f"{models}/mistral.py:4"
    assert loc(sec, "supported", "ToyVLForConditionalGeneration") == (f"{models}/eagle_mixins.py", 4)
    assert loc(sec, "supported", "OlmoForCausalLM") == (f"{models}/transformers/base.py", 6)
    assert sec.sources["unsupported"]["MixtralForCausalLM"]["registry"] == f"{models}/registry.py:6"


def test_vllm_follows_the_language_model_body_the_interface_asserts_on():
    # vLLM 0.33.0 interfaces.py:1736-1749: set_aux_hidden_state_layers takes get_language_model(), then
    # its .model, and asserts it is an EagleModelMixin. HollowVL declares SupportsEagle3 but builds
    # MixtralForCausalLM (by registry name) whose body is a plain module; ToyVL builds Llama, whose body
    # is a mixin; AnyVL's text model comes from the checkpoint (not decided: kept); the transformers
    # backend brings its own set_aux_hidden_state_layers.
    sec = vllm.extract(tree("vllm"))
    models = "vllm/model_executor/models"
    assert sec.data["aux_body_not_mixin"] == {"HollowVLForConditionalGeneration": "MixtralModel"}
    assert loc(sec, "aux_body_not_mixin", "HollowVLForConditionalGeneration") == (f"{models}/mixtral.py", 13)
    note = sec.sources["unsupported"]["HollowVLForConditionalGeneration"]["note"]
    assert "MixtralModel" in note and "EagleModelMixin" in note
    assert sec.sources["where"]["aux_body_assertion"]["line"] == 21


def test_vllm_reads_which_bodies_relay_aux_states_over_pipeline_parallelism():
    # vLLM 0.33.0 eagle3_utils.py:57-63: at pp > 1 the V2 runner needs the inner decoder's
    # supports_aux_hidden_states_over_pp; LlamaModel sets it (and ToyVL builds Llama), the mixin's default
    # is False and unset; AnyVL's text model is the checkpoint's (not decided).
    sec = vllm.extract(tree("vllm"))
    pp = sec.data["aux_over_pp"]
    assert pp["LlamaForCausalLM"] is True and pp["ToyVLForConditionalGeneration"] is True and pp["Qwen2ForCausalLM"]
    assert pp["OlmoForCausalLM"] is False and "AnyVLForConditionalGeneration" not in pp
    assert loc(sec, "aux_over_pp", "LlamaForCausalLM") == ("vllm/model_executor/models/llama.py", 7)
    assert sec.sources["where"]["aux_over_pp_check"]["file"].endswith("eagle3_utils.py")


def test_vllm_drafts_runners_and_rename():
    sec = vllm.extract(tree("vllm"))
    drafts = sec.data["draft_architectures"]
    assert "MuseGlimmerAssistantModel" in drafts and "Eagle3LlamaForCausalLM" not in drafts
    assert "renamed to DFlashMuseGlimmerAssistantModel" in sec.sources["draft_architectures"][
        "MuseGlimmerAssistantModel"]["note"]
    assert sec.data["draft_architectures_classes"]["DFlash2BeamDraftModel"] == "vllm.models.beam.DFlash2BeamForCausalLM"
    assert sec.data["draft_v1_refused"] == [
        "DFlash2DraftModel", "DFlashQwen3XPressModel", "LiLiCorrDraftModel", "Qwen3XPressModel"]
    assert loc(sec, "draft_v1_refused", "DFlash2DraftModel") == ("vllm/config/vllm.py", 9)
    assert loc(sec, "draft_v1_refused", "Qwen3XPressModel") == ("vllm/config/vllm.py", 7)
    v2 = sec.data["draft_v2_speculators"]
    assert (v2["DFlashDraftModel"], v2["DFlash2BeamDraftModel"], v2["MuseGlimmerAssistantModel"]) == (
        "DFlashSpeculator", "DFlash2Speculator", "DFlashSpeculator")
    assert v2["Qwen3XPressModel"] == "XPressSpeculator"  # through XPRESS_ARCHITECTURES, imported by name
    assert sec.sources["where"]["dflash_architecture_rename"]["line"] == 6
    assert sec.data["speculators_formats"] == ["dflash", "eagle3"]
    assert sec.sources["where"]["speculators_dflash_ids"]["line"] == 17


# -- SGLang -----------------------------------------------------------------------------------------


def test_sglang_entry_classes_and_inherited_hook():
    sec = sglang.extract(tree("sglang"))
    assert {"LlamaForCausalLM", "MistralForCausalLM", "Phi3ForCausalLM"} <= set(sec.data["supported"])
    assert "Qwen2ForCausalLM" in sec.data["unsupported"]  # it has only the EAGLE-3 hook
    entry = sec.sources["supported"]["MistralForCausalLM"]
    assert (entry["file"], entry["line"]) == ("sglang/srt/models/llama.py", 8)  # the inherited def
    assert entry["entry"] == "sglang/srt/models/mistral.py:8" and "inherited from LlamaForCausalLM" in entry["note"]
    assert sec.data["draft_architectures"] == [
        "DFlash2DraftModel", "DFlashDraftModel", "LiLiCorrDraftModel", "MuseGlimmerAssistantModel"]
    assert list(sec.data["dspark_architectures_classes"]) == ["DSparkDraftModel"]
    assert sec.sources["where"]["domino_projector"]["line"] == 3
    assert sec.sources["where"]["fallback_without_hook"]["file"] == "sglang/srt/models/transformers.py"


def test_sglang_follows_a_hook_handed_to_a_part_without_it():
    """qwen3_vl.py-like wrappers: a hook that calls self.<part>.<hook> works only if the part's class has it.
    The part's class is found through __init__ defaults passed down by super().__init__, a factory method's
    return and a class attribute; a hasattr guard means the author handled a part without it."""
    sec = sglang.extract(tree("sglang"))
    works = {"VLHookedForConditionalGeneration", "FactoryForConditionalGeneration", "GuardedForCausalLM"}
    fails = {"VLForConditionalGeneration", "VLAliasForConditionalGeneration", "BodyClsForCausalLM"}
    assert works <= set(sec.data["supported"]) and not fails & set(sec.data["supported"])
    assert fails <= set(sec.data["unsupported"])
    assert sec.data["hook_delegated_to_missing"] == dict.fromkeys(sorted(fails), "TextModel")
    src = sec.sources["unsupported"]["VLAliasForConditionalGeneration"]
    assert (src["file"], src["line"]) == ("sglang/srt/models/qwen3_vl.py", 24)  # the failing call, inherited
    assert "self.model is TextModel" in src["note"] and "AttributeError" in src["note"]
    assert sec.sources["hook_delegated_to_missing"]["BodyClsForCausalLM"]["line"] == 61


# -- mlx-lm and dflash's MLX path -------------------------------------------------------------------


def test_mlx_cache_classes_delegation_defaults_and_remaps():
    sec = mlx.extract(tree("mlx-lm"), tree("dflash"), lambda mt: {})
    caches = sec.data["cache_classes"]
    assert caches["gpt2"] == ["KVCache"]  # no make_cache: mlx-lm's default
    assert loc(sec, "cache_classes", "gpt2") == ("mlx_lm/models/cache.py", 4)
    assert caches["gemma3"] == ["KVCache", "RotatingKVCache"]  # self.language_model.make_cache()
    assert caches["qwen3_5_moe"] == ["ArraysCache", "KVCache"]  # make_cache inherited from qwen3_5.Model
    assert caches["mistral3"] == ["KVCache"] and caches["llava"] == ["KVCache"]  # wrapper without make_cache
    assert caches["mistral"] == caches["llama"]
    assert "remapped to llama" in sec.sources["cache_classes"]["mistral"]["note"]
    assert sec.data["cache_trimmable"] == {
        "ArraysCache": "never", "CacheList": "conditional", "KVCache": "always", "RotatingKVCache": "conditional"}
    assert sec.data["non_trimmable_model_types"] == ["mamba", "qwen3_5", "qwen3_5_moe"]
    assert sec.data["replay_model_types"] == ["qwen3_5", "qwen3_5_moe"]  # Model derives from qwen3_5.Model
    assert sec.sources["where"]["replay_module"] == {
        "file": "dflash/model_mlx.py", "line": 14, "note": "dflash's MLX path replays this GatedDeltaNet"}
    # llama only makes sliding layers from a config that lists them; gemma3 builds them by default
    assert sec.data["rotating_when_layer_types_sliding"] == ["llama", "mistral"]
    assert sec.data["rotating_kv_cache_model_types"] == ["gemma3", "gemma3_text"]


def test_mlx_replay_adds_the_text_model_types_given():
    text = {"qwen3_5": {"qwen3_5_text": build.Loc("transformers/x.py", 3)}}
    sec = mlx.extract(tree("mlx-lm"), tree("dflash"), lambda mt: text.get(mt, {}))
    assert "qwen3_5_text" in sec.data["replay_model_types"]


# -- transformers, speculators, dflash ---------------------------------------------------------------


def test_transformers_stateful_and_recurrent_layer_types():
    sec = transformers.extract(tree("transformers"))
    assert sec.data["recurrent_layer_types"] == ["conv", "hybrid", "linear_attention"]
    assert sec.data["stateful_model_types"] == ["mamba", "qwen3_5", "qwen3_5_text"]
    assert loc(sec, "stateful_model_types", "qwen3_5_text") == ("transformers/models/qwen3_5/modeling_qwen3_5.py", 7)
    # llama only compares with a recurrent type; the conv vision tower is no text model
    assert sec.data["recurrent_layer_model_types"] == ["qwen3_next"]
    assert sec.data["no_default_dynamic_cache"] == ["rwkv", "xlstm"]
    assert transformers.text_model_types(tree("transformers"), "qwen3_5") == {
        "qwen3_5_text": build.Loc("transformers/models/qwen3_5/configuration_qwen3_5.py", 5,
                                  "text_config model_type of qwen3_5")}


def test_speculators_formats_and_id_conversion():
    sec = speculators.extract(tree("speculators"))
    assert sec.data["formats"] == ["dflash", "dflash2"]
    assert sec.data["format_architectures"]["dflash2"] == ["DFlash2DraftModel"]
    where_ = sec.sources["where"]
    assert (where_["aux_id_is_zlab_id_plus_one"]["line"], where_["converter_drops_last_layer_id"]["line"]) == (5, 5)


def test_dflash_config_keys():
    sec = dflash.extract(tree("dflash"))
    torch_keys, mlx_keys = sec.data["torch_config_keys"], sec.data["mlx_config_keys"]
    assert torch_keys["dflash_config.mask_token_id"] == "dflash_config, else top level"
    assert torch_keys["hidden_size"] == "top level" and "get_text_config" not in torch_keys  # a call, not a key
    assert mlx_keys["dflash_config.target_layer_ids"] == "required" and mlx_keys["block_size"] == "optional"
    assert "rope_parameters|rope_scaling.rope_theta" in mlx_keys
    assert sec.data["draft_architectures"] == ["DFlash2DraftModel", "DFlashDraftModel"]


def test_build_joins_the_sections_and_unions_the_recurrent_types():
    facts, srcs = build.build({e: tree(e) for e in build.PACKAGES})
    assert facts["engines"] == ENGINE_VERSIONS
    assert facts["common"]["recurrent_model_types"] == ["mamba", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_next"]
    assert "qwen3_5_text" in facts["mlx"]["replay_model_types"]  # joined from transformers' text config
    assert not build.missing_sources(facts, srcs)


# -- broken layouts ---------------------------------------------------------------------------------


def _edit(tmp_path: Path, engine: str, path: str, old: str, new: str) -> Path:
    root = tmp_path / engine
    shutil.copytree(DIRS[engine], root)
    target = root / path
    if old == "<delete>":
        target.unlink()
    else:
        text = target.read_text()
        assert old in text, (path, old)
        target.write_text(text.replace(old, new))
    return root


BROKEN = [
    ("vllm", "vllm/model_executor/models/registry.py", "    **_MULTIMODAL_MODELS,\n", "", "no longer includes"),
    ("vllm", "vllm/model_executor/models/interfaces.py", "class SupportsEagle3(", "class Eagle3(", "not found"),
    ("vllm", "vllm/model_executor/models/mixtral.py", "<delete>", "", "not found in the sources"),
    ("vllm", "vllm/transformers_utils/configs/eagle.py", 'f"DFlash{arch}"', "arch", "changed shape"),
    ("vllm", "vllm/config/vllm.py", "self._is_dflash_candidate_draft()", "False", "refusal"),
    ("sglang", "sglang/srt/models/registry.py", "<delete>", "", "is missing"),
    ("sglang", "sglang/srt/models/llama.py", "def set_dflash_layers_to_capture", "def other",
     "LlamaForCausalLM not found"),
    ("sglang", "sglang/srt/models/qwen3_vl.py", "self.model = language_model_cls(", "self.model = build(",
     "delegations whose target class was not found"),
    ("mlx-lm", "mlx_lm/models/cache.py", "class RotatingKVCache(", "class Ring(", "RotatingKVCache not found"),
    ("mlx-lm", "mlx_lm/models/mamba.py", "ArraysCache(size=2)", "list()", "builds no cache class"),
    ("mlx-lm", "mlx_lm/utils.py", '"llava": "mistral3"', '"llava": "mistral9"', "unknown module"),
    ("dflash", "dflash/model_mlx.py", "import GatedDeltaNet", "import Other as GatedDeltaNet", "no GatedDeltaNet"),
    ("transformers", "transformers/models/mamba/modeling_mamba.py", "_is_stateful = True", "", "mamba not found"),
    ("speculators", "speculators/convert/dflash/converter.py", "if i + 1 != num_verifier_layers", "",
     "conversion was not found"),
]


@pytest.mark.parametrize("engine,path,old,new,message", BROKEN, ids=[f"{b[0]}:{b[4]}" for b in BROKEN])
def test_a_changed_layout_fails_loudly(tmp_path, engine, path, old, new, message):
    root = _edit(tmp_path, engine, path, old, new)
    trees = {e: tree(e, root if e == engine else None) for e in build.PACKAGES}
    with pytest.raises(LayoutError, match=message):
        build.build(trees)


# -- wheels and the command -------------------------------------------------------------------------


def _wheels(folder: Path) -> Path:
    """The fixture trees packed as wheels named like the real ones."""
    folder.mkdir()
    for engine, root in DIRS.items():
        pkg = build.PACKAGES[engine]
        with zipfile.ZipFile(folder / f"{pkg}-{ENGINE_VERSIONS[engine]}-py3-none-any.whl", "w") as zf:
            for path in sorted(root.rglob("*.py")):
                zf.write(path, path.relative_to(root).as_posix())
    return folder


def test_a_wheel_reads_like_its_unpacked_tree(tmp_path):
    wheels = _wheels(tmp_path / "wheels")
    whl = build.locate("vllm", wheels, tmp_path)
    assert whl.suffix == ".whl"
    assert vllm.extract(SourceTree.open(whl)).sources == vllm.extract(tree("vllm")).sources


def test_refresh_writes_both_files_and_check_detects_a_change(tmp_path, capsys):
    wheels = _wheels(tmp_path / "wheels")
    out = tmp_path / "engine_support.json"
    assert main(["refresh", "--wheels", str(wheels), "--output", str(out)]) == 0
    facts = json.loads(out.read_text())
    assert facts["engines"] == ENGINE_VERSIONS and facts["vllm"]["unsupported"] == ["HollowVLForConditionalGeneration", "MixtralForCausalLM"]
    assert json.loads((tmp_path / "engine_sources.json").read_text())["engines"] == ENGINE_VERSIONS
    assert main(["refresh", "--wheels", str(wheels), "--output", str(out), "--check"]) == 0
    out.write_text(out.read_text().replace('"MixtralForCausalLM"', '"GemmaForCausalLM"'))
    capsys.readouterr()
    assert main(["refresh", "--wheels", str(wheels), "--output", str(out), "--check"]) == 1
    assert "differ from the engines' code" in capsys.readouterr().err


def test_refresh_without_the_wheels_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    out = tmp_path / "engine_support.json"
    assert main(["refresh", "--wheels", str(tmp_path / "empty"), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "vllm-0.33.0" in err and not out.exists()


# -- the committed data -----------------------------------------------------------------------------


def test_every_committed_fact_has_a_source():
    facts = json.loads(build.DATA.read_text())
    srcs = json.loads(build.SOURCES.read_text())
    assert build.missing_sources(facts, srcs) == []
    assert facts["engines"] == srcs["engines"] == ENGINE_VERSIONS == engine_versions()
    # the check can fail: drop one location and one list entry's source
    del srcs["vllm"]["supported"]["LlamaForCausalLM"]
    srcs["mlx"]["where"].pop("replay_module")
    assert build.missing_sources(facts, srcs) == ["vllm.supported: LlamaForCausalLM", "mlx.replay_module: replay_module"]


def test_accessors_cite_the_engine_and_version():
    src = source_of("vllm", "supported", "LlamaForCausalLM")
    assert isinstance(src, EngineSource) and src.cite().startswith("vllm 0.33.0 vllm/model_executor/models/")
    assert where("mlx", "replay_module").cite().startswith("dflash 0.1.0 dflash/model_mlx.py:")
    assert source_of("mlx", "cache_classes", "llama").engine == "mlx-lm"
    assert set(sources("speculators", "formats")) == set(engine_data("speculators")["formats"])
    with pytest.raises(KeyError):
        source_of("vllm", "supported", "NoSuchForCausalLM")


def test_draft_support_per_engine():
    v2 = draft_support("DFlash2DraftModel")
    assert v2["vllm"]["loads"] and v2["vllm"]["v1_refuses"] and v2["vllm"]["v2_speculator"] == "DFlash2Speculator"
    assert v2["sglang"]["loads"] and v2["dflash"]["loads"]
    xpress = draft_support("Qwen3XPressModel")
    assert xpress["vllm"]["loads"] and not xpress["sglang"]["loads"] and not xpress["dflash"]["loads"]
    assert not any(e["loads"] for e in draft_support("Eagle3LlamaForCausalLM").values())


def test_the_recurrent_list_is_the_derived_one():
    from dflash_compat import contract

    value = contract.RECURRENT_MODEL_TYPES
    assert isinstance(value, frozenset) and value == set(engine_data("common")["recurrent_model_types"])
    # the checker's and the runtime's old lists disagreed on these; the engines' code settles it
    assert {"rwkv", "xlstm", "qwen3_5_text", "lfm2_moe"} <= value and "rwkv6" not in value
    assert "llama" not in value and "gemma3" not in value


# -- the real wheels (opt-in: pytest -m engine_wheels) ------------------------------------------------


def _real_wheels() -> Path | None:
    folder = Path(os.environ.get("DFLASH_WHEELS", "/work/wheels"))
    try:
        for engine in ENGINE_VERSIONS:
            build.locate(engine, folder, folder)
    except LayoutError:
        return None
    return folder


@pytest.mark.engine_wheels
def test_the_committed_files_are_what_the_real_wheels_give():
    wheels = _real_wheels()
    if wheels is None:
        pytest.skip("engine wheels not found (set DFLASH_WHEELS to a folder holding them)")
    start = time.perf_counter()
    facts, srcs = build.regenerate(wheels)
    print(f"regenerated from {wheels} in {time.perf_counter() - start:.1f} s")
    assert facts == build.DATA.read_text(encoding="utf-8")
    assert srcs == build.SOURCES.read_text(encoding="utf-8")


def test_a_config_check_reads_the_facts_but_not_the_locations():
    # engine_sources.json is parsed only when something cites a line; a clean check cites none
    probe = (
        "import sys\nfrom dflash_compat.cli import main\n"
        f"sys.argv = ['dflash-check', {str(ROOT / 'examples/qwen3-8b/target')!r}, '--draft', "
        f"{str(ROOT / 'examples/qwen3-8b/draft')!r}, '--no-deep', '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from dflash_compat import engine_support as es\n"
        "print('LOADED', es._load.cache_info().currsize, es._load_sources.cache_info().currsize, file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "LOADED 1 0" in res.stderr, res.stderr[-2000:]
