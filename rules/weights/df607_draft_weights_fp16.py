"""DF607: the draft's weights are stored in float16."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_LOAD


def check(ctx: RuleContext):
    w = ctx.headers
    n = sum(1 for dt in w.tensor_dtypes.values() if dt == "F16")
    if not n:
        return
    yield Violation(
        f"{n} of {w.tensor_count} draft tensors are float16 (main dtype {w.dtype}); DFlash drafts are trained in "
        "bfloat16 and fp16 casts have given ~0% acceptance without an error",
        [ctx.tensor_loc("*", f) for f in w.files[:1]],
    )


RULE = Rule(
    code="DF607",
    name="draft-weights-fp16",
    severity="warning",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's tensors are not float16 (bfloat16 or float32 expected), per the safetensors headers.",
    why="fp16's narrow range overflows the draft's activations (large target hidden states through fc and "
    "hidden_norm); casts of bf16 drafts to fp16 have produced near-zero acceptance with no error. The dflash "
    "reference loads drafts as bf16 (an fp16 file has already lost what the cast lost); the MLX port keeps the "
    "stored dtype and runs in fp16.",
    example="model.safetensors with every tensor F16",
    fix="Use the bf16 release of the draft and run it in bfloat16 (`dtype=torch.bfloat16`, `--dtype bfloat16`).",
    sources=(REF_LOAD, MLX_LOAD_WEIGHTS),
)
