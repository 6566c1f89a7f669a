"""DF605: the DFlash 2 convolution / candidate-selector tensors do not match the draft's format and config."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules._sources import MLX_LOAD_WEIGHTS, REF_LOAD, REF_V2, REF_V2_INIT
from dflash_compat.rules.weights._draft_tensors import (
    expected_v2,
    layer_index,
    modelled,
    normalise_v2,
    source_name,
    v2_name,
    weight_shapes,
)

MLX_V2 = EngineSource("dflash", "dflash/model_mlx.py", "239-295", "DFlash 2 conv and selector modules (MLX)")


def check(ctx: RuleContext):
    d = ctx.draft
    if not modelled(d):
        return
    _, shapes, _ = weight_shapes(ctx.headers)
    present = {normalise_v2(n): s for n, s in shapes.items() if v2_name(n)}
    layers = sorted({i for i in (layer_index(n) for n in shapes) if i is not None})
    want = expected_v2(d, layers)
    unread = sorted(n for n in present if n not in want)
    if unread and not want:
        first = unread[0]
        what = "DFlash v1" if d.format == "zlab-v1" else f"a {d.family} draft without DFlash 2 layers"
        yield Violation(
            f"the config says {what} ({quote_items(d.architectures, raw=True) or 'no DFlash2 architecture'}) but the weights "
            f"hold {len(present)} DFlash 2 tensor(s) such as {first}: its loader ignores them",
            [ctx.dloc("architectures", "architectures"), ctx.tensor_loc(source_name(ctx.headers, first), "*.safetensors")],
        )
        return
    if not want:
        return
    missing = [n for n in want if n not in present]
    wrong = [(n, present[n], w) for n, w in want.items() if n in present and w is not None and present[n] != w]
    if missing:
        yield Violation(
            f"{d.family} draft lacks {len(missing)} tensor(s): {', '.join(missing[:4])}"
            f"{' ...' if len(missing) > 4 else ''}",
            [ctx.tensor_loc(source_name(ctx.headers, n), "*.safetensors") for n in missing[:3]],
        )
    for name, got, w in wrong[:3]:
        yield Violation(
            f"{name} is {quote(got)}, the config (conv_kernel_size {d.conv_kernel_size}, conv_group_size "
            f"{d.conv_group_size}, selector_rank {d.selector_rank}, vocab {d.vocab_size}) implies {w}",
            [ctx.tensor_loc(source_name(ctx.headers, name), "*.safetensors")],
        )


RULE = Rule(
    code="DF605",
    name="draft-v2-tensors-mismatch",
    severity="error",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="A DFlash 2 draft holds, per layer, `attention_conv` / `mlp_conv` `base_kernel [2, k, hidden]` and "
    "`kernel_projection.weight [2*k*hidden/group, hidden]`, plus `candidate_selector.{predecessor,successor}_codebook "
    "[vocab, rank]` and `candidate_selector.hidden_projection.weight [rank, hidden]`; a v1 draft holds none of them.",
    why="The DFlash 2 loader builds these modules from `dflash_config.conv_kernel_size`, `conv_group_size` and "
    "`selector_rank`, and every loader picks v1 or v2 by `architectures`: with DFlashDraftModel the dflash "
    "reference ignores the v2 tensors (a load warning) and drafts without the convolutions the weights were "
    "trained with, and the MLX port's strict loader rejects them.",
    example='draft {"architectures": ["DFlashDraftModel"]} whose weights hold layers.0.attention_conv.base_kernel',
    fix="Set architectures to DFlash2DraftModel and the dflash_config v2 keys the checkpoint was trained with (or "
    "use the matching revision of the config).",
    sources=(REF_V2, REF_V2_INIT, REF_LOAD, MLX_V2, MLX_LOAD_WEIGHTS),
)
