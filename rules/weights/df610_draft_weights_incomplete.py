"""DF610: a draft safetensors file is shorter than its own header declares (an interrupted download)."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_LOAD


def check(ctx: RuleContext):
    for fname, (have, need) in sorted(ctx.headers.incomplete.items()):
        yield Violation(
            f"{fname} holds {have} bytes of tensor data, its header declares {need}: the file is truncated",
            [ctx.tensor_loc("*", fname)],
        )


RULE = Rule(
    code="DF610",
    name="draft-weights-incomplete",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="Each local draft safetensors file is at least as long as its header's data offsets say (checked from "
    "the file size; no tensor data is read).",
    why="An interrupted download leaves a valid header and a short data section; loaders fail with an "
    "unexpected end of file, or mmap tensors past the end.",
    example="model.safetensors whose header declares 1 GB of data while the file is 300 MB",
    fix="Download the draft again (`hf download REPO --local-dir DIR` resumes and verifies).",
    sources=(REF_LOAD, MLX_LOAD_WEIGHTS),
)
