"""transformers: model types whose cache cannot be cropped (stateful models, linear-attention / conv layers)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from dflash_compat.enginefacts.anchors import code_features
from dflash_compat.enginefacts.astutil import assigned, method, string_dict
from dflash_compat.enginefacts.facts import Section, Step, require
from dflash_compat.enginefacts.pymod import ClassRef, Modules, string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["extract", "text_model_types"]

MODELS = "transformers/models"
CACHE_UTILS = "transformers/cache_utils.py"
GENERATION = "transformers/generation/utils.py"
LINEAR_MIXIN = "LinearAttentionCacheLayerMixin"
# The classes a checkpoint's `architectures` names for generation; their flags decide generate().
GENERATIVE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")


def recurrent_layer_types(tree: SourceTree, mods: Modules) -> dict[str, Loc]:
    """`layer_types` values whose DynamicCache layer keeps conv / recurrent state (derived from
    LinearAttentionCacheLayerMixin) instead of per-position keys and values."""
    module = "transformers.cache_utils"
    mixin = mods.class_named(module, LINEAR_MIXIN)
    if mixin is None:
        raise LayoutError(f"{CACHE_UTILS}: class {LINEAR_MIXIN} not found")
    mapping = assigned(tree.parse(CACHE_UTILS).body, "DYNAMIC_LAYER_TYPE_MAPPING", CACHE_UTILS)
    out = {}
    for layer_type, value, line in string_dict(mapping, f"{CACHE_UTILS} DYNAMIC_LAYER_TYPE_MAPPING"):
        ref = mods.resolve(module, value)
        if isinstance(ref, ClassRef) and mixin in mods.mro(ref):
            out[layer_type] = Loc(CACHE_UTILS, line, f"DynamicCache layer {ref.name} keeps conv/recurrent state")
    require(out, "transformers recurrent layer types", anchor="linear_attention")
    return out


def _model_type(mods: Modules, config: ClassRef) -> Optional[tuple[str, int]]:
    found = mods.find_member(config, "model_type")
    if found and isinstance(found[1], ast.Assign) and (s := string_value(found[1].value)) is not None:
        return s, found[1].lineno
    return None


def _config_class(mods: Modules, ref: ClassRef) -> Optional[ClassRef]:
    """The config class a model class declares (`config: XConfig` or `config_class = XConfig`)."""
    for cls in mods.mro(ref):
        for stmt in cls.node.body:
            expr = None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "config":
                expr = stmt.annotation
            elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "config_class"
                                                      for t in stmt.targets):
                expr = stmt.value
            if expr is not None:
                found = mods.resolve(cls.module, expr)
                if isinstance(found, ClassRef):
                    return found
    return None


def _files(tree: SourceTree, prefix: str) -> list[str]:
    return [p for folder in tree.packages(MODELS) for p in tree.files(folder)
            if p.rsplit("/", 1)[1].startswith(prefix)]


def _stateful_candidates(tree: SourceTree) -> list[str]:
    """Modeling files that set `_is_stateful`, and those importing from their model folders: only
    these can hold a stateful class (parsing all ~1000 modeling files would take half a minute)."""
    files = _files(tree, "modeling_")
    texts = {p: tree.read(p) for p in files}
    direct = {p for p, text in texts.items() if "_is_stateful" in text}
    folders = {p.split("/")[-2] for p in direct}
    alternatives = "|".join(map(re.escape, sorted(folders)))
    pattern = re.compile(rf"\.({alternatives})[. ]") if folders else None
    return sorted(p for p, text in texts.items() if p in direct or (pattern and pattern.search(text)))


def stateful_model_types(tree: SourceTree, mods: Modules) -> dict[str, Loc]:
    """Model types of generative classes that are `_is_stateful` (directly or through a base): HF's
    assisted generation refuses them, and their cache keeps state cropping cannot undo."""
    out: dict[str, Loc] = {}
    for path in _stateful_candidates(tree):
        module = path[:-3].replace("/", ".")
        for stmt in mods.module_body(module):
            if not (isinstance(stmt, ast.ClassDef) and stmt.name.endswith(GENERATIVE_SUFFIXES)):
                continue
            ref = mods.class_named(module, stmt.name)
            flag = mods.find_member(ref, "_is_stateful") if ref else None
            if not (flag and isinstance(flag[1], ast.Assign) and isinstance(flag[1].value, ast.Constant)
                    and flag[1].value.value is True):
                continue
            config = _config_class(mods, ref)
            mt = _model_type(mods, config) if config else None
            if mt is None:
                raise LayoutError(f"{path}: stateful {stmt.name} declares no config class with a model_type")
            owner, assign = flag
            out.setdefault(mt[0], owner.loc(assign.lineno).with_(f"{stmt.name} is stateful (_is_stateful)"))
    return out


def layer_type_model_types(tree: SourceTree, mods: Modules, recurrent: set[str]) -> dict[str, Loc]:
    """Model types whose config class fills `layer_types` with a recurrent layer type by default."""
    out: dict[str, Loc] = {}
    quoted = [f'"{t}"' for t in recurrent]
    for path in _files(tree, "configuration_"):
        if not any(q in tree.read(path) for q in quoted):  # the literal must be in the class itself
            continue
        module = path[:-3].replace("/", ".")
        for stmt in mods.module_body(module):
            if not isinstance(stmt, ast.ClassDef):
                continue
            line = _default_recurrent_layer(stmt, recurrent)
            ref = mods.class_named(module, stmt.name)
            mt = _model_type(mods, ref) if (line and ref and not _tower(mods, ref)) else None
            if mt is not None:
                out.setdefault(mt[0], Loc(path, line, f"{stmt.name} fills layer_types with recurrent layers"))
    require(out, "transformers configs with recurrent layer types", anchor="qwen3_next")
    return out


def _tower(mods: Modules, config: ClassRef) -> bool:
    """A sub-config of a non-text tower (base_config_key "vision_config", "audio_config", ...)."""
    found = mods.find_member(config, "base_config_key")
    key = string_value(found[1].value) if found and isinstance(found[1], ast.Assign) else None
    return key is not None and key != "text_config"


def _default_recurrent_layer(cls: ast.ClassDef, recurrent: set[str]) -> Optional[int]:
    """Line of a recurrent layer-type literal in a value assigned to something named `layer_types`."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not any("layer_types" in ast.unparse(t) for t in targets):
            continue
        for sub in ast.walk(value):
            if string_value(sub) in recurrent:
                return sub.lineno
    return None


def text_model_types(tree: SourceTree, model_type: str) -> dict[str, Loc]:
    """The model_type of `model_type`'s text sub-config (its config class with base_config_key
    "text_config"), as config.json files of that family spell `text_config.model_type`."""
    mods = Modules(tree)
    module = f"transformers.models.{model_type}.configuration_{model_type}"
    if mods.module_path(module) is None:
        return {}
    out = {}
    for stmt in mods.module_body(module):
        if isinstance(stmt, ast.ClassDef):
            ref = mods.class_named(module, stmt.name)
            key = mods.find_member(ref, "base_config_key") if ref else None
            if key and isinstance(key[1], ast.Assign) and string_value(key[1].value) == "text_config":
                mt = _model_type(mods, ref)
                if mt:
                    out[mt[0]] = Loc(ref.path, mt[1], f"text_config model_type of {model_type}")
    return out


def default_cache_exclusions(tree: SourceTree) -> dict[str, Loc]:
    """Class-name fragments `_supports_default_dynamic_cache` refuses a DynamicCache for."""
    fn = method(tree.parse(GENERATION).body, None, "_supports_default_dynamic_cache", GENERATION)
    out = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            for elt in node.value.elts:
                if (s := string_value(elt)) is not None:
                    out[s] = Loc(GENERATION, elt.lineno, "generate() gives classes with this in their name no "
                                 "default DynamicCache")
    require(out, f"{GENERATION} _supports_default_dynamic_cache exclusions")
    return out


GEN_UTILS = "transformers/generation/utils.py"
# Behaviour that changed in the window, each located by the code it must contain (anchors.find_code).
FEATURES = {
    "assisted_refuses_stateful": (GEN_UTILS, "assisted generation is not supported with stateful models",
                                  "assisted generation refuses _is_stateful models"),
    "recurrent_rollback": (GEN_UTILS, "activate_past_recording(recurrent_states_to_keep=",
                           "assisted generation records recurrent states and rolls them back on rejection"),
    "dflash_speculation": (GEN_UTILS, 'speculation_type == "dflash"',
                           'generate(..., speculation_type="dflash") drafts with a DFlash assistant'),
    # sampled speculative decoding accepts a drafted token when r < p/q (5.25; before: r <= p/q, which accepts a
    # token the target gives probability 0 when r is exactly 0)
    "strict_sampling_acceptance": (GEN_UTILS, "is_accepted = r_i < probability_ratio",
                                   "sampled acceptance is strict: r < p/q"),
}


def extract(tree: SourceTree) -> Section:
    """Each fact is read on its own: one the reader cannot find at this release is recorded unknown (with
    why) and the others are still read."""
    mods = Modules(tree)
    layer_types = Step(lambda: recurrent_layer_types(tree, mods))
    sec = Section()
    sec.meta("source", "transformers: stateful generative classes (_is_stateful), configs whose default "
             "layer_types hold linear-attention / conv layers, and cache_utils' recurrent cache layers")
    with sec.guard("recurrent_layer_types"):
        sec.names("recurrent_layer_types", layer_types())
    feats: dict[str, Loc] = {}
    with sec.guard("features"):
        feats = code_features(tree, FEATURES, required=True)
        sec.names("features", feats)
    with sec.guard("stateful_model_types"):
        stateful = stateful_model_types(tree, mods)
        if "assisted_refuses_stateful" in feats:  # while generate refuses them, _is_stateful must still mark some
            require(stateful, "transformers stateful model types", anchor="mamba")
        sec.names("stateful_model_types", stateful)
    with sec.guard("recurrent_layer_model_types"):
        sec.names("recurrent_layer_model_types", layer_type_model_types(tree, mods, set(layer_types())))
    with sec.guard("no_default_dynamic_cache"):
        sec.names("no_default_dynamic_cache", default_cache_exclusions(tree))
    return sec
