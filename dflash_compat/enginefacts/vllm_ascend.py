"""vllm-ascend: vLLM's platform plugin for Ascend NPUs. Its DFlash runs upstream vLLM's draft classes through its own
proposer (spec_decode/dflash_proposer.py), which asserts the draft's class at the first step; read from its source
distributions (the package index carries no wheel for x86 without the NPU toolchain)."""

from __future__ import annotations

import ast

from dflash_compat.enginefacts.anchors import code_features
from dflash_compat.enginefacts.facts import Section, require
from dflash_compat.enginefacts.pymod import string_value
from dflash_compat.enginefacts.source import LayoutError, Loc, SourceTree

__all__ = ["FEATURES", "extract"]

SPEC = "vllm_ascend/spec_decode/__init__.py"
BASE = "vllm_ascend/spec_decode/llm_base_proposer.py"
PATCH = "vllm_ascend/patch/worker/patch_qwen3_dflash.py"
FEATURES = {
    "keeps_reduced_draft_head": (BASE, 'self.method == "dflash" and getattr(self.model, "draft_id_to_target_id", '
                                 "None) is not None",
                                 "a DFlash draft with a d2t vocabulary map keeps its own lm_head (vllm-ascend #11374)"),
    "context_kv_patched": (PATCH, "DFlashQwen3Model.precompute_and_store_context_kv = precompute_and_store_context_kv",
                           "vLLM's DFlashQwen3Model context K/V precompute replaced by a fused NPU version"),
}


def dflash_proposer(tree: SourceTree) -> Loc:
    for node in ast.walk(tree.parse(SPEC)):
        if isinstance(node, ast.Compare) and "dflash" in [string_value(c) for c in node.comparators]:
            return Loc(SPEC, node.lineno, "method dflash -> AscendDflashProposer")
    raise LayoutError(f"{SPEC}: no `method == \"dflash\"` branch")


def draft_classes(tree: SourceTree) -> dict[str, Loc]:
    """The draft model classes the proposer's first-pass assert accepts for eagle3 / dflash."""
    for node in ast.walk(tree.parse(BASE)):
        if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Call):
            continue
        call = node.test
        if getattr(call.func, "id", "") != "isinstance" or len(call.args) != 2:
            continue
        kinds = call.args[1]
        names = [e.id for e in getattr(kinds, "elts", []) if isinstance(e, ast.Name)]
        if any("DFlash" in n for n in names):
            found = {n: Loc(BASE, node.lineno, "isinstance assert on the draft model (eagle3 / dflash)") for n in names}
            require(found, "vllm-ascend draft classes", anchor="DFlashQwen3ForCausalLM")
            return found
    raise LayoutError(f"{BASE}: the draft-class assert naming a DFlash class was not found")


def extract(tree: SourceTree) -> Section:
    sec = Section()
    sec.meta("source", "vllm-ascend: the DFlash proposer, the draft classes its first pass asserts, and its DFlash "
             "patches of upstream vLLM")
    with sec.guard("features"):
        sec.names("features", code_features(tree, FEATURES))
    if not tree.exists(SPEC) or "dflash" not in tree.read(SPEC).lower():
        sec.names("draft_classes", {})  # a release without DFlash (0.18.0)
        return sec
    with sec.guard("dflash_proposer"):
        sec.where("dflash_proposer", dflash_proposer(tree), "AscendDflashProposer")
    with sec.guard("draft_classes"):
        sec.names("draft_classes", draft_classes(tree))
    return sec
