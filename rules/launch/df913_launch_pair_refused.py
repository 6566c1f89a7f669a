"""DF913: a launch whose models were read and refused, as `dflash-check TARGET --draft DRAFT` refuses them."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation


def check(ctx):
    if not ctx.pair_refused:
        return
    yield Violation(f"the pair cannot be served: {ctx.pair_refused}",
                    [ctx.at("draft" if "draft" in ctx.launch.where else None)])


RULE = Rule(
    code="DF913",
    name="launch-pair-refused",
    severity="error",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="The target and draft a launch names are models its engine can load: `dflash-check TARGET --draft "
    "DRAFT` accepts their files (for llama.cpp: a draft GGUF of architecture dflash that holds tensors).",
    why="`check` refuses such files before any rule runs (exit 2: a GGUF whose architecture is dflash-draft, "
    "llama.cpp #25116; a metadata-only GGUF, ik_llama.cpp #2043; a config that describes no model). In a launch "
    "file the same files would otherwise pass as a pair that was merely not checked, and the deployment fails "
    "when the engine loads them.",
    example="llama-server -m target.gguf -md dflash-draft-arch.gguf --spec-type draft-dflash",
    fix="Convert the draft again with the build's own convert_hf_to_gguf.py (--target-model-dir TARGET), with "
    "its weights in the folder.",
)
