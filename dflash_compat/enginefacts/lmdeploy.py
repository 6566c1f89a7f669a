"""lmdeploy: the PyTorch engine's DFlash draft classes, the targets that hand it their layers' hidden states,
the architectures TurboMind (the default backend, which serves no draft) takes, and the refusals of
lmdeploy/pytorch/spec_decode/dflash_utils.py, each located by the code it must contain."""

from __future__ import annotations

import ast

from dflash_compat.enginefacts.anchors import code_features
from dflash_compat.enginefacts.astutil import calls_to
from dflash_compat.enginefacts.facts import Section, Step, require
from dflash_compat.enginefacts.pymod import string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["FEATURES", "api_server_flags", "extract"]

MODULE_MAP = "lmdeploy/pytorch/models/module_map.py"
MODELS = "lmdeploy/pytorch/models"
DRAFT_MODULE = "qwen3_dflash"
# a target model class hands the draft its layers' hidden states when its module reads the layer ids the
# speculative agent resolved (spec_decode/base.py build_model_context)
CAPTURE = "target_aux_hidden_state_layers"
TURBOMIND = "lmdeploy/turbomind/supported_models.py"
CLI_UTILS = "lmdeploy/cli/utils.py"
CLI_SERVE = "lmdeploy/cli/serve.py"
DFLASH_UTILS = "lmdeploy/pytorch/spec_decode/dflash_utils.py"
CONFIG = "lmdeploy/pytorch/config.py"
CONFIG_BUILDER = "lmdeploy/pytorch/engine/config_builder.py"
ASYNC_ENGINE = "lmdeploy/serve/core/async_engine.py"
MESSAGES = "lmdeploy/messages.py"

# Behaviour in the window, each located by the code it must contain (anchors.find_code); a release without
# the file has no DFlash at all (required=False: absence is a fact, not a layout change).
FEATURES = {
    # checkpoint contract (parse_dflash_config / _validate_dflash_v1_supported)
    "needs_dflash_config_dict": (DFLASH_UTILS, "DFlash checkpoint requires a dflash_config dictionary",
                                 "dflash_config must be a dict (a draft without the key: AttributeError)"),
    "reads_num_target_layers": (DFLASH_UTILS, "num_target_layers = draft_hf_config.num_target_layers",
                                "num_target_layers is read as an attribute (a draft without it: AttributeError)"),
    "depth_must_match": (DFLASH_UTILS, "DFlash draft/target depth mismatch",
                         "num_target_layers must equal the target's num_hidden_layers"),
    "block_size_nested_only": (DFLASH_UTILS, "max_query_length = dflash_config['block_size']",
                               "block_size is read from dflash_config only (KeyError without it)"),
    "query_within_block": (DFLASH_UTILS, "query_length > max_query_length",
                           "1 + num_speculative_tokens must not exceed dflash_config.block_size"),
    "mask_token_nested_only": (DFLASH_UTILS, "DFlash checkpoint requires dflash_config.mask_token_id",
                               "mask_token_id is read from dflash_config only"),
    "layer_ids_increasing": (DFLASH_UTILS, "must be strictly increasing and duplicate-free",
                             "target_layer_ids strictly increasing, no duplicates"),
    "layer_ids_in_range": (DFLASH_UTILS, "DFlash target_layer_ids contains an out-of-range value",
                           "every target layer id in [0, num_target_layers)"),
    "layer_ids_integers": (DFLASH_UTILS, "target_layer_ids must contain only integers",
                           "target_layer_ids: a non-empty list of integers"),
    "layer_ids_formula": (DFLASH_UTILS, "def build_target_layer_ids",
                          "no target_layer_ids: evenly spaced from 1 to N-3 (one draft layer: N // 2)"),
    "layer_types_required": (DFLASH_UTILS, "DFlash V1 requires an explicit layer_types list",
                             "layer_types: a list, one entry per draft layer"),
    "layer_types_known": (DFLASH_UTILS, "DFlash supports only full_attention and sliding_attention draft layers",
                          "layer_types only full_attention / sliding_attention"),
    "sliding_needs_window": (DFLASH_UTILS, "sliding_attention layers require the model-default sliding_window",
                             "sliding layers need the draft's sliding_window"),
    "swa_window_must_match": (DFLASH_UTILS, "DFlash V1 requires the SWA window to equal ModelConfig.sliding_window",
                              "dflash_config swa_window_size / sliding_window must equal sliding_window"),
    "use_swa_refused": (DFLASH_UTILS, "DFlash V1 does not support use_swa forcing non-causal sliding attention",
                        "use_swa without a sliding layer is refused"),
    "causal_pattern": (DFLASH_UTILS, "DFlash V1 supports only the model-default causal attention pattern",
                       "only causal sliding layers and non-causal full layers"),
    "attention_sink_refused": (DFLASH_UTILS, "DFlash attention-sink bias checkpoints are not supported yet",
                               "attention_sink_bias / add_swa_attention_sink_bias refused"),
    # deployment (validate_dflash_dist_config / _cache_config / _runtime_config)
    "dp_refused": (DFLASH_UTILS, "DFlash V1 does not support data parallelism", "dp must be 1"),
    "ep_refused": (DFLASH_UTILS, "DFlash V1 does not support expert parallel draft execution", "ep must be 1"),
    "prefix_caching_refused": (DFLASH_UTILS, "DFlash V1 does not support prefix-cache reuse yet",
                               "--enable-prefix-caching refused"),
    "kv_quant_refused": (DFLASH_UTILS, "DFlash V1 does not support KV-cache quantization yet",
                         "--quant-policy other than 0 refused"),
    "cuda_only": (DFLASH_UTILS, "DFlash V1 requires CUDA", "device_type must be cuda"),
    "tp_divides_heads": (CONFIG, "assert model_config.num_attention_heads % tp == 0",
                         "tensor-parallel size divides the attention heads (an assert)"),
    "dtype_per_model": (CONFIG, "torch_dtype = torch_dtype if torch_dtype in ['float16', 'bfloat16'] else 'float16'",
                        "--dtype auto: each model (target, draft) keeps its own torch_dtype"),
    "block_size_flag": (MESSAGES, "self.num_speculative_tokens = self.dflash_block_size - 1",
                        "--speculative-dflash-block-size B means B - 1 draft tokens"),
    "turbomind_ignores_draft": (ASYNC_ENGINE, "speculative decoding is not supported by turbomind",
                                "the TurboMind backend logs a warning and serves without the draft"),
    "auto_backend": (CLI_SERVE, "backend = autoget_backend(args.model_path",
                     "without --backend pytorch, api_server picks TurboMind for the architectures it supports"),
}


def _map_entries(tree: SourceTree) -> dict[str, tuple[str, Loc]]:
    """MODULE_MAP's architecture -> (`module.Class` under lmdeploy/pytorch/models, its line)."""
    out: dict[str, tuple[str, Loc]] = {}
    for call in calls_to(tree.parse(MODULE_MAP), "update"):
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "MODULE_MAP"):
            continue
        if not call.args or not isinstance(call.args[0], ast.Dict):
            raise LayoutError(f"{MODULE_MAP}:{call.lineno}: MODULE_MAP.update without a dict literal")
        for key, value in zip(call.args[0].keys, call.args[0].values):
            arch = string_value(key) if key is not None else None
            if arch is None:
                raise LayoutError(f"{MODULE_MAP}:{call.lineno}: a MODULE_MAP key that is not a string")
            # f'{LMDEPLOY_PYTORCH_MODEL_PATH}.qwen3.Qwen3ForCausalLM': the constant tail names module.Class
            parts = value.values if isinstance(value, ast.JoinedStr) else [value]
            tail = "".join(string_value(p) or "" for p in parts if isinstance(p, ast.Constant)).lstrip(".")
            if tail.count(".") < 1:
                raise LayoutError(f"{MODULE_MAP}:{key.lineno}: {arch}'s class path is not read")
            out[arch] = (tail, Loc(MODULE_MAP, key.lineno))
    require(out, "lmdeploy MODULE_MAP architectures", anchor="LlamaForCausalLM")
    return out


def draft_architectures(entries: dict[str, tuple[str, Loc]]) -> dict[str, Loc]:
    found = {arch: loc.with_(f"MODULE_MAP -> {path}") for arch, (path, loc) in entries.items()
             if path.split(".")[0] == DRAFT_MODULE}
    require(found, "lmdeploy DFlash draft architectures", anchor="DFlashDraftModel")
    return found


def capture_architectures(tree: SourceTree, entries: dict[str, tuple[str, Loc]]) -> tuple[dict, dict]:
    """Architectures whose model module reads the resolved DFlash target layer ids (they return the layers'
    hidden states to the draft), and the others (the draft then gets the final hidden state only)."""
    reads: dict[str, int] = {}
    supported, unsupported = {}, {}
    for arch, (path, loc) in entries.items():
        module = path.split(".")[0]
        if module == DRAFT_MODULE:
            continue
        file = f"{MODELS}/{module}.py"
        if file not in reads:
            reads[file] = 0
            if tree.exists(file):
                for i, line in enumerate(tree.read(file).splitlines(), 1):
                    if CAPTURE in line:
                        reads[file] = i
                        break
        if reads[file]:
            supported[arch] = Loc(file, reads[file]).with_(f"{path} reads {CAPTURE}", entry=str(loc))
        else:
            unsupported[arch] = loc.with_(f"{path}: its module never reads {CAPTURE}")
    return supported, unsupported


def turbomind_architectures(tree: SourceTree) -> dict[str, Loc]:
    for node in tree.parse(TURBOMIND).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SUPPORTED_ARCHS" for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "dict":
                found = {kw.arg: Loc(TURBOMIND, kw.value.lineno, "TurboMind serves it (no speculative decoding)")
                         for kw in value.keywords if kw.arg}
            elif isinstance(value, ast.Dict):
                found = {string_value(k): Loc(TURBOMIND, k.lineno, "TurboMind serves it (no speculative decoding)")
                         for k in value.keys if k is not None and string_value(k)}
            else:
                raise LayoutError(f"{TURBOMIND}: SUPPORTED_ARCHS is neither dict(...) nor a dict literal")
            require(found, "TurboMind SUPPORTED_ARCHS", anchor="LlamaForCausalLM")
            return found
    raise LayoutError(f"{TURBOMIND}: SUPPORTED_ARCHS not found")


def _helper_flags(tree: SourceTree) -> dict[str, dict[str, Loc]]:
    """ArgumentHelper's static methods -> the flags each registers (cli/utils.py)."""
    out: dict[str, dict[str, Loc]] = {}
    for node in tree.parse(CLI_UTILS).body:
        if isinstance(node, ast.ClassDef) and node.name == "ArgumentHelper":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef):
                    flags = {}
                    for call in calls_to(fn, "add_argument"):
                        for arg in call.args:
                            text = string_value(arg)
                            if text and text.startswith("-"):
                                flags.setdefault(text, Loc(CLI_UTILS, call.lineno, f"ArgumentHelper.{fn.name}"))
                    out[fn.name] = flags
    if not out:
        raise LayoutError(f"{CLI_UTILS}: class ArgumentHelper not found")
    return out


def api_server_flags(tree: SourceTree) -> dict[str, Loc]:
    """The flags `lmdeploy serve api_server` accepts: the `add_argument` literals of
    SubCliServe.add_parser_api_server and of every ArgumentHelper method it calls."""
    helpers = _helper_flags(tree)
    fn = next((n for n in ast.walk(tree.parse(CLI_SERVE)) if isinstance(n, ast.FunctionDef)
               and n.name == "add_parser_api_server"), None)
    if fn is None:
        raise LayoutError(f"{CLI_SERVE}: add_parser_api_server not found")
    found: dict[str, Loc] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "ArgumentHelper":
            if node.func.attr not in helpers:
                raise LayoutError(f"{CLI_SERVE}:{node.lineno}: ArgumentHelper.{node.func.attr} not in {CLI_UTILS}")
            for flag, loc in helpers[node.func.attr].items():
                found.setdefault(flag, loc)
        elif node.func.attr == "add_argument":
            for arg in node.args:
                text = string_value(arg)
                if text and text.startswith("-"):
                    found.setdefault(text, Loc(CLI_SERVE, node.lineno, "api_server"))
    require(found, "lmdeploy api_server flags", anchor="--backend")
    return found


def speculative_algorithms(tree: SourceTree) -> dict[str, Loc]:
    """The choices of --speculative-algorithm (ArgumentHelper.add_spec_group)."""
    for call in calls_to(tree.parse(CLI_UTILS), "add_argument"):
        if call.args and string_value(call.args[0]) == "--speculative-algorithm":
            choices = next((kw.value for kw in call.keywords if kw.arg == "choices"), None)
            if not isinstance(choices, (ast.List, ast.Tuple)):
                raise LayoutError(f"{CLI_UTILS}:{call.lineno}: --speculative-algorithm has no literal choices")
            return {string_value(e): Loc(CLI_UTILS, e.lineno, "--speculative-algorithm choice")
                    for e in choices.elts if string_value(e)}
    raise LayoutError(f"{CLI_UTILS}: --speculative-algorithm not found")


def extract(tree: SourceTree) -> Section:
    entries = Step(lambda: _map_entries(tree))
    sec = Section()
    sec.meta("source", "lmdeploy: MODULE_MAP draft and target classes of the PyTorch engine (the target's module reads "
             f"{CAPTURE}), TurboMind's SUPPORTED_ARCHS, and the DFlash refusals of spec_decode/dflash_utils.py")
    sec.meta("interface", CAPTURE)
    with sec.guard("features"):
        sec.names("features", code_features(tree, FEATURES))
    with sec.guard("speculative_algorithms"):
        sec.names("speculative_algorithms", speculative_algorithms(tree))
    with sec.guard("draft_architectures"):
        sec.names("draft_architectures", draft_architectures(entries()) if "dflash" in
                  speculative_algorithms(tree) else {})
    with sec.guard("supported", "unsupported"):
        supported, unsupported = capture_architectures(tree, entries())
        sec.names("supported", supported)
        sec.names("unsupported", unsupported)
    with sec.guard("turbomind_architectures"):
        sec.names("turbomind_architectures", turbomind_architectures(tree))
    with sec.guard("cli_flags"):
        sec.names("cli_flags", api_server_flags(tree))
    return sec
