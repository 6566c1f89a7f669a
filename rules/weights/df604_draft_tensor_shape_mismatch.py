"""DF604: an attention, MLP or norm tensor of the draft has a shape its config does not give."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import MLX_ATTENTION, MLX_LOAD_WEIGHTS, REF_ATTENTION
from dflash_compat.rules.weights._draft_tensors import (
    FLOAT_DTYPES,
    expected,
    expected_head,
    layer_index,
    modelled,
    source_name,
    weight_shapes,
)

# The config field a wrong shape most likely contradicts, by tensor suffix.
_BLAME = {
    "q_proj": "num_attention_heads", "o_proj": "num_attention_heads",
    "k_proj": "num_key_value_heads", "v_proj": "num_key_value_heads",
    "q_norm": "head_dim", "k_norm": "head_dim",
    "gate_proj": "intermediate_size", "up_proj": "intermediate_size", "down_proj": "intermediate_size",
}
# Family heads: the config key that sizes them.
_HEAD_BLAME = {"xpress_head.": "xpress_rank", "prefix_gru.": "gru_hidden_dim", "embed_proj.": "emb_dim"}


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return
    _, shapes, dtypes = weight_shapes(ctx.headers)
    layers = sorted({i for i in (layer_index(n) for n in shapes) if i is not None})
    wrong = []
    for name, want in {**expected(d, layers), **expected_head(d)}.items():
        got = shapes.get(name)
        # fc is DF601's; quantised (packed) tensors do not carry their logical shape.
        if name == "fc.weight" or want is None or got is None or dtypes.get(name) not in FLOAT_DTYPES:
            continue
        if got != want:
            wrong.append((name, got, want))
    if not wrong:
        return
    name, got, want = wrong[0]
    blame = next((f for part, f in _BLAME.items() if f".{part}." in name), None) or next(
        (f for pre, f in _HEAD_BLAME.items() if name.startswith(pre)), "hidden_size")
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    yield Violation(
        f"{name} is {quote(got)}, the config implies {quote(want)}{more}: check {blame}",
        [ctx.tensor_loc(src := source_name(ctx.headers, name), ctx.headers.tensor_files.get(src, "model.safetensors")),
         ctx.dloc(blame)],
    )


RULE = Rule(
    code="DF604",
    name="draft-tensor-shape-mismatch",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="Per draft layer: q_proj `[heads*head_dim, hidden]`, k/v_proj `[kv_heads*head_dim, hidden]`, o_proj "
    "`[hidden, heads*head_dim]`, q_norm/k_norm `[head_dim]`, gate/up_proj `[intermediate, hidden]`, down_proj "
    "`[hidden, intermediate]`, layernorms `[hidden]` (float tensors; quantised ones are skipped).",
    why="Engines build the draft from its config and then copy the weights in; a config that disagrees with the "
    "checkpoint is a `size mismatch` at load, or (MLX, lenient loaders) a wrongly reshaped attention.",
    example='draft {"num_key_value_heads": 8, "head_dim": 128} with k_proj.weight [512, 4096] (4 kv heads)',
    fix="Correct the config field named in the message to the value the weights were trained with, or use the "
    "config that shipped with these weights.",
    sources=(REF_ATTENTION, MLX_ATTENTION, MLX_LOAD_WEIGHTS),
)
