"""DF403: a hybrid (recurrent + attention) target needs SGLang's extra-buffer scheduler."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, Rule, Violation
from dflash_compat.quoting import quote

from ._common import model_type_loc


def check(ctx: CheckContext):
    t = ctx.target
    if not t.is_hybrid:
        return
    model_type = t.text_model_type or t.model_type
    yield Violation(
        f"target {quote(model_type)} keeps recurrent state: launch SGLang with --mamba-scheduler-strategy extra_buffer "
        "so rejected draft tokens can be rolled back",
        [model_type_loc(ctx)],
    )


RULE = Rule(
    code="DF403",
    name="sglang-hybrid-target-scheduler",
    severity="warning",
    backends=("sglang",),
    check=check,
    what="Notes a target with recurrent / linear-attention layers (Qwen3-Next, Qwen3.5, Nemotron-H, ...) on SGLang.",
    why="Speculative verification writes rejected tokens into the recurrent state; SGLang keeps the extra state "
    "copies needed to roll back only with `--mamba-scheduler-strategy extra_buffer`.",
    example='target {"model_type": "qwen3_next"}',
    fix="Add --mamba-scheduler-strategy extra_buffer to the SGLang launch command.",
)
