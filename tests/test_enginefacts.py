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

from dflash_compat.checker import EngineSource
from dflash_compat.enginefacts import build, dflash, mlx, sglang, speculators, transformers, vllm, window
from dflash_compat.enginefacts.__main__ import main
from dflash_compat.enginefacts.anchors import anchor_at, resolve
from dflash_compat.enginefacts.source import LayoutError, SourceTree
from dflash_compat.engines import store as es
from dflash_compat.engines.registry import bundled_versions, select_versions
from dflash_compat.engines.store import apply_patch, draft_support, release

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
]


@pytest.mark.parametrize("engine,path,old,new,message", BROKEN, ids=[f"{b[0]}:{b[4]}" for b in BROKEN])
def test_a_changed_layout_is_an_unknown_fact_and_the_others_are_read(tmp_path, engine, path, old, new, message):
    """A reader that loses its way records the facts it could not read as unknown, with why, and reads the
    section's other facts: never an empty or guessed list, never a stop."""
    root = _edit(tmp_path, engine, path, old, new)
    trees = {e: tree(e, root if e == engine else None) for e in build.PACKAGES}
    facts, srcs = build.build(trees)
    reasons = {(section, key): why for section, data in facts.items() if isinstance(data, dict)
               for key, why in data.get("unknown", {}).items()}
    hit = [sk for sk, why in reasons.items() if message in why]
    assert hit, reasons
    section = hit[0][0]
    intact, _ = build.build({e: tree(e) for e in build.PACKAGES})
    for key, value in intact[section].items():  # every fact is either unknown or read as before
        if (section, key) not in reasons:
            assert facts[section][key] == value, (section, key)
        else:
            assert key not in facts[section] and key not in srcs[section].get("where", {})
    assert not build.missing_sources(facts, srcs)


# -- a layout change is recorded as an unknown fact, not a stop ---------------------------------------


def test_a_lost_refusal_is_recorded_unknown_for_that_release(tmp_path):
    root = _edit(tmp_path, "vllm", "vllm/config/vllm.py", "self._is_dflash_candidate_draft()", "False")
    sec = vllm.extract(tree("vllm", root))
    assert "draft_v1_refused" not in sec.data and "refusal" in sec.unknown["draft_v1_refused"]
    assert "unknown" in sec.facts_json() and not window.check_located("vllm", sec.facts_json(), sec.sources_json())


def test_a_lost_converter_rule_is_unknown_for_that_release(tmp_path):
    root = _edit(tmp_path, "speculators", "speculators/convert/dflash/converter.py",
                 "if i + 1 != num_verifier_layers", "")
    sec = speculators.extract(tree("speculators", root))
    assert "conversion was not found" in sec.unknown["converter_drops_last_layer_id"]
    assert "converter_drops_last_layer_id" not in sec.sources.get("where", {}) and sec.data["formats"]


def test_a_release_without_the_v1_runner_has_no_v1_facts(tmp_path):
    root = _edit(tmp_path, "vllm", "vllm/v1/spec_decode/dflash.py", "<delete>", "")
    sec = vllm.extract(tree("vllm", root))
    assert "v1_dflash_proposer" not in sec.data["features"] and sec.data["draft_v1_refused"] == []
    assert "eagle3_interface_v1" not in sec.sources["where"] and not sec.unknown
    assert "v1_dflash_proposer" in vllm.extract(tree("vllm")).data["features"]


def test_transformers_features_follow_the_code(tmp_path):
    sec = transformers.extract(tree("transformers"))
    assert sec.data["features"] == ["assisted_refuses_stateful"] and "mamba" in sec.data["stateful_model_types"]
    # 5.25's change: the refusal gone, the recurrent states recorded for the drafted tokens
    root = _edit(tmp_path, "transformers", "transformers/generation/utils.py",
                 "assisted generation is not supported with stateful models",
                 "{0}\"\n            )\n        cache.activate_past_recording(recurrent_states_to_keep=n)\n        (\"x")
    sec = transformers.extract(tree("transformers", root))
    assert sec.data["features"] == ["recurrent_rollback"]
    assert sec.sources["features"]["recurrent_rollback"]["file"] == "transformers/generation/utils.py"


# -- anchors ----------------------------------------------------------------------------------------


def test_an_anchor_follows_moved_code_and_is_gone_when_the_code_is(tmp_path):
    path = "vllm/config/vllm.py"
    before = tree("vllm")
    text = before.read(path).splitlines()
    line = next(i for i, t in enumerate(text, 1) if "_is_dflash_candidate_draft()" in t and "def " not in t)
    anchor = anchor_at(before, path, f"{line}-{line + 1}")
    assert resolve(before, anchor) == (line, line + 1) and anchor.symbol
    moved = _edit(tmp_path, "vllm", path, "class VllmConfig:", "import os  # moved\n\n\nclass VllmConfig:")
    got = resolve(tree("vllm", moved), anchor)
    assert got is not None and got[0] > line and got[1] - got[0] == 1
    gone = _edit(tmp_path / "b", "vllm", path, "self._is_dflash_candidate_draft()", "False")
    assert resolve(tree("vllm", gone), anchor) is None


def test_every_bundled_citation_resolves_to_its_typed_lines_where_it_was_typed():
    anchors = json.loads((window.STORE / "anchors.json").read_text())["anchors"]
    from dflash_compat.enginefacts.__main__ import TYPED_AGAINST as typed

    own = {(s.engine, s.path, s.lines): s.version for s in _all_citations()}
    wrong = []
    for key in anchors:
        engine, _, rest = key.partition(" ")
        path, _, lines = rest.rpartition(":")
        version = own.get((engine, path, lines)) or typed[engine]
        got = es.cite_lines(engine, path, lines, version)
        first, _, last = lines.partition("-")
        # the typed range, less blank lines at its start
        if got is None or not int(first) <= int(got.split("-")[0]) <= int(first) + 2 \
                or int(got.split("-")[-1]) > int(last or first):
            wrong.append((key, version, got))
    assert not wrong, wrong[:5]


def _all_citations():
    from dflash_compat.engines.families import all_sources
    from dflash_compat.rules import ALL_RULES

    return [s for r in ALL_RULES for s in r.sources] + all_sources()


def test_a_rule_citation_shows_the_lines_of_the_release_checked():
    from rules._sources import HF_STATEFUL

    assert HF_STATEFUL.cite("5.24.0") == "transformers 5.24.0 transformers/generation/utils.py:1885-1890"
    assert HF_STATEFUL.at("5.25.0") == ("5.25.0", None)  # 5.25 removed the refusal
    assert "anchor gone" in HF_STATEFUL.cite("5.25.0")
    v22 = HF_STATEFUL.at("5.22.0")[1]
    assert v22 is not None and v22 != "1885-1890"  # the same code, elsewhere in that release


# -- the store: one base release plus per-release patches ---------------------------------------------


def test_a_patch_undoes_itself():
    base = {"a": ["x", "y"], "b": {"c": 1, "d": [1, 2]}, "e": "s", "gone": 1}
    new = {"a": ["y", "z"], "b": {"c": 2, "d": [1, 2]}, "e": "t", "f": {"g": 1}}
    patch = window.make_patch(base, new)
    assert apply_patch(base, patch) == new and patch["a"] == {"$add": ["z"], "$rm": ["x"]}
    assert window.make_patch(new, new) == {}


def _wheels(folder: Path, version: str, edit: tuple[str, str, str, str] | None = None) -> Path:
    """The fixture trees packed as wheels named like the real ones, at `version` (optionally edited)."""
    folder.mkdir(parents=True, exist_ok=True)
    for engine, root in DIRS.items():
        pkg = build.PACKAGES[engine]
        with zipfile.ZipFile(folder / f"{pkg}-{version}-py3-none-any.whl", "w") as zf:
            for path in sorted(root.rglob("*.py")):
                name = path.relative_to(root).as_posix()
                text = path.read_text()
                if edit and edit[0] == engine and edit[1] == name:
                    text = text.replace(edit[2], edit[3])
                zf.writestr(name, text)
    return folder


def _store(tmp_path: Path, versions: list[str]) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    (store / "index.json").write_text(json.dumps({"engines": {e: {"versions": versions} for e in build.PACKAGES}}))
    return store


def test_refresh_writes_a_window_and_check_regenerates_it_byte_for_byte(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(window, "citations", lambda: [])  # the real rules cite files the fixtures lack
    wheels = _wheels(tmp_path / "wheels", "1.0.0")
    _wheels(wheels, "1.1.0", ("vllm", "vllm/model_executor/models/registry.py", '"MixtralForCausalLM"',
                              '"MixtralForCausalLM"'))
    store = _store(tmp_path, ["1.0.0", "1.1.0"])
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store)]) == 0
    index = json.loads((store / "index.json").read_text())
    assert index["engines"]["vllm"] == {"versions": ["1.0.0", "1.1.0"], "base": "1.1.0", "section": "vllm"}
    data = json.loads((store / "vllm.json").read_text())
    assert data["facts"]["unsupported"] == ["HollowVLForConditionalGeneration", "MixtralForCausalLM"] and data["versions"]["1.0.0"] == {}
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store), "--check"]) == 0
    (store / "vllm.json").write_text((store / "vllm.json").read_text().replace("Mixtral", "Gemma"))
    capsys.readouterr()
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store), "--check"]) == 1
    assert "differ from the engines' code" in capsys.readouterr().err


def test_refresh_check_fails_on_an_unknown_fact(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(window, "citations", lambda: [])
    wheels = _wheels(tmp_path / "wheels", "1.0.0", ("vllm", "vllm/config/vllm.py",
                                                    "self._is_dflash_candidate_draft()", "False"))
    store = _store(tmp_path, ["1.0.0"])
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store)]) == 0
    err = capsys.readouterr().err
    assert "unknown: vllm 1.0.0 draft_v1_refused" in err  # refresh prints what it could not find
    assert main(["refresh", "--wheels", str(wheels), "--output", str(store), "--check"]) == 1
    assert "unknown at a bundled release" in capsys.readouterr().err


def test_facts_on_demand_go_to_the_user_cache_where_the_next_check_finds_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    wheels = _wheels(tmp_path / "wheels", "9.9.0")
    assert main(["refresh", "--engine", "vllm==9.9.0", "--wheels", str(wheels)]) == 0
    facts = tmp_path / "cache" / "dflash-compat" / "facts" / "vllm" / "9.9.0" / "facts.json"
    assert json.loads(facts.read_text())["unsupported"] == ["HollowVLForConditionalGeneration", "MixtralForCausalLM"]
    sel = select_versions(option=("vllm==9.9.0",), installed=False)["vllm"]
    assert (sel.used, sel.status) == ("9.9.0", "cached")
    assert release("vllm", "9.9.0").facts["unsupported"] == ["HollowVLForConditionalGeneration", "MixtralForCausalLM"]
    assert release("vllm", "9.9.0").source("unsupported", "MixtralForCausalLM").cite().startswith("vllm 9.9.0 vllm/")


@pytest.mark.parametrize("args,needle", [
    (["--engine", "vllm=0.34"], "expected NAME==VERSION"),
    (["--engine", "vlm==0.34.0"], "unknown engine"),
    (["--engine", "vllm==0.99.0", "--wheels", "EMPTY"], "pip download --no-deps vllm==0.99.0"),
])
def test_refresh_bad_input_is_one_line(tmp_path, capsys, args, needle):
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    assert main(["refresh", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err


def test_refresh_offline_is_one_line(tmp_path, capsys, monkeypatch):
    """An unreachable package index (nothing listens on port 9): one line, exit 2, nothing written."""
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["refresh", "--engine", "speculators==0.9.0", "--cache", str(tmp_path / "dl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip download speculators==0.9.0" in err
    assert not (tmp_path / "cache" / "dflash-compat" / "facts").exists()


# -- the bundled window -----------------------------------------------------------------------------

WINDOW = {"vllm": ["0.32.0", "0.33.0", "0.34.0"], "sglang": ["0.5.21", "0.5.22", "0.5.23"], "dflash": ["0.1.0"],
          "mlx-lm": ["0.31.1", "0.31.2", "0.31.3", "0.32.0", "0.32.1", "0.32.2"],
          "transformers": ["5.22.0", "5.22.1", "5.22.2", "5.23.0", "5.24.0", "5.25.0"],
          "speculators": ["0.8.0", "0.8.1", "0.9.0"]}


def test_the_window_is_bundled_and_every_fact_has_a_source():
    assert {e: list(bundled_versions(e)) for e in WINDOW} == WINDOW
    for engine, versions in WINDOW.items():
        section = window.SECTION[engine]
        for version in versions:
            facts = release(engine, version).facts
            located = es._located(engine, version)["sources"]
            assert not facts.get("unknown"), (engine, version, facts.get("unknown"))
            assert window.check_located(section, facts, located) == [], (engine, version)
    # the check can fail: drop one location
    facts, located = release("vllm", "0.34.0").facts, json.loads(json.dumps(es._located("vllm", "0.34.0")["sources"]))
    del located["supported"]["LlamaForCausalLM"]
    assert window.check_located("vllm", facts, located) == ["vllm.supported: LlamaForCausalLM"]


def test_accessors_cite_the_engine_and_the_release():
    src = release("vllm", "0.33.0").source("supported", "LlamaForCausalLM")
    assert isinstance(src, EngineSource) and src.cite().startswith("vllm 0.33.0 vllm/model_executor/models/")
    assert release("vllm").source("supported", "LlamaForCausalLM").cite().startswith("vllm 0.34.0 ")
    assert release("mlx-lm").where("replay_module").cite().startswith("dflash 0.1.0 dflash/model_mlx.py:")
    assert release("mlx-lm").source("cache_classes", "llama").engine == "mlx-lm"
    assert set(release("speculators").sources("formats")) == set(release("speculators").facts["formats"])
    with pytest.raises(KeyError):
        release("vllm").source("supported", "NoSuchForCausalLM")


def test_draft_support_per_release():
    v33, v34 = {"vllm": "0.33.0"}, {"vllm": "0.34.0"}
    assert draft_support("DFlash2DraftModel", v33)["vllm"]["v1_refuses"]  # 0.33: the V1 runner refuses it
    assert not draft_support("DFlash2DraftModel", v34)["vllm"]["v1_refuses"]  # 0.34: there is no V1 runner
    assert draft_support("DFlash2DraftModel", v34)["vllm"]["v2_speculator"] == "DFlash2Speculator"
    ricursive = "DFlash2RicursiveDraftModel"
    assert not draft_support(ricursive, v33)["vllm"]["loads"] and draft_support(ricursive, v34)["vllm"]["loads"]
    assert draft_support(ricursive, v34)["vllm"]["v2_speculator"] == "DFlash2Speculator"
    assert not any(e["loads"] for e in draft_support("Eagle3LlamaForCausalLM").values())


def test_the_window_shows_the_releases_changes():
    vllm34, vllm33 = release("vllm", "0.34.0").facts, release("vllm", "0.33.0").facts
    assert "v1_dflash_proposer" in vllm33["features"] and "v1_dflash_proposer" not in vllm34["features"]
    assert {"dflash", "dflash2"} <= set(vllm34["method_config_modules"]) and not vllm33["method_config_modules"]
    hf24, hf25 = release("transformers", "5.24.0").facts, release("transformers", "5.25.0").facts
    assert "assisted_refuses_stateful" in hf24["features"] and "recurrent_rollback" in hf25["features"]
    assert "qwen3_5" in hf24["stateful_model_types"] and hf25["stateful_model_types"] == []


def test_the_recurrent_list_is_the_derived_one():
    from dflash_compat import contract

    value = contract.RECURRENT_MODEL_TYPES
    assert isinstance(value, frozenset) and value == es.recurrent_model_types()
    # the checker's and the runtime's old lists disagreed on these; the engines' code settles it
    assert {"rwkv", "xlstm", "qwen3_5_text", "lfm2_moe", "mamba"} <= value and "rwkv6" not in value
    assert "llama" not in value and "gemma3" not in value


def test_a_config_check_reads_the_facts_but_not_the_locations():
    # the sources files are parsed only when something cites a line; a clean check cites none
    probe = (
        "import sys\nfrom dflash_compat.cli.app import main\n"
        f"sys.argv = ['dflash-check', {str(ROOT / 'examples/qwen3-8b/target')!r}, '--draft', "
        f"{str(ROOT / 'examples/qwen3-8b/draft')!r}, '--no-deep', '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from dflash_compat.engines import store as es\n"
        "print('LOADED', es._wheel_file.cache_info().currsize, es._sources_file.cache_info().currsize, "
        "file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "LOADED " in res.stderr and " 0\n" in res.stderr.split("LOADED ")[1][:10], res.stderr[-2000:]


# -- the real wheels (opt-in: pytest -m engine_wheels) ------------------------------------------------


def _real_wheels() -> Path | None:
    folder = Path(os.environ.get("DFLASH_WHEELS", "/work/wheels"))
    try:
        for engine, versions in WINDOW.items():
            for version in versions:
                build.locate(engine, folder, folder, version)
    except LayoutError:
        return None
    return folder


@pytest.mark.engine_wheels
def test_the_bundled_window_is_what_the_real_wheels_give(capsys):
    wheels = _real_wheels()
    if wheels is None:
        pytest.skip("engine wheels not found: fetch them with `pip download --no-deps NAME==VERSION -d /work/wheels` "
                    "for every release in docs/engine-facts.md (or set DFLASH_WHEELS)")
    start = time.perf_counter()
    assert main(["refresh", "--wheels", str(wheels), "--check"]) == 0, capsys.readouterr().err[-3000:]
    print(f"regenerated the window from {wheels} in {time.perf_counter() - start:.1f} s")


def test_sglang_launch_flags_are_its_serverargs_fields():
    sec = sglang.extract(tree("sglang"))
    assert sec.data["cli_flags"] == ["--attn-dp-size", "--enable-dp-attention", "--model-path", "--tensor-parallel-size",
                                     "--tp-size"]
    assert sec.sources["cli_flags"]["--attn-dp-size"]["file"] == "sglang/srt/arg_groups/fields/parallel.py"
    # no_cli fields are not flags unless add_cli_args registers them by hand
    assert sec.sources["cli_flags"]["--enable-dp-attention"]["file"] == "sglang/srt/server_args.py"


def test_the_extractor_reads_every_rule_citation_from_the_rule_files():
    """enginefacts.citations reads the rules' EngineSource calls with ast (it imports no rule): the same set as
    the imported rules' sources, for every engine whose citations are anchored per release."""
    from dflash_compat.enginefacts.citations import rule_citations
    from dflash_compat.engines.registry import ENGINES
    from dflash_compat.rules import ALL_RULES

    wheels = {e for e, info in ENGINES.items() if info.store == "wheels"}
    static = {c for c in rule_citations() if c[0] in wheels}
    imported = {(s.engine, s.path, s.lines, s.version) for r in ALL_RULES for s in r.sources if s.engine in wheels}
    assert static == imported and len(static) > 200
