"""DF120: the draft's MLP activation is not SiLU."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote


def check(ctx: CheckContext):
    act = ctx.draft.hidden_act
    if act is None or act == "silu":
        return
    yield Violation(f"draft hidden_act is {quote(act)}, not 'silu'", [ctx.dloc("hidden_act")])


RULE = Rule(
    code="DF120",
    name="draft-activation-not-silu",
    severity="error",
    backends=(COMMON,),
    check=check,
    what="The draft's `hidden_act` is `silu` (or absent, which means silu).",
    why="Every DFlash draft implementation is a Qwen3-style block with a SiLU-gated MLP; SGLang raises ValueError "
    "on any other value, and engines that ignore the field compute a different function than the weights expect.",
    example='draft {"hidden_act": "gelu_pytorch_tanh"}',
    fix="Use a draft trained with SiLU; if the value was copied from the target by mistake, set it to 'silu'.",
)
