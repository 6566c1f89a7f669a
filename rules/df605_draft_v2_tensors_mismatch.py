"""DF605: the DFlash 2 convolution / candidate-selector tensors do not match the draft's format and config."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation
from dflash_compat.quoting import quote, quote_items

from ._draft_tensors import expected_v2, layer_index, normalise_v2, v2_name, weight_shapes


def check(ctx: CheckContext):
    d = ctx.draft
    pre, shapes, _ = weight_shapes(ctx.headers)
    present = {normalise_v2(n): s for n, s in shapes.items() if v2_name(n)}
    if d.format == "zlab-v1":
        if present:
            first = sorted(present)[0]
            yield Violation(
                f"the config says DFlash v1 ({quote_items(d.architectures, raw=True) or 'no DFlash2 architecture'}) but the weights "
                f"hold {len(present)} DFlash 2 tensor(s) such as {quote_items([first], raw=True)}: a v1 loader ignores them",
                [ctx.dloc("architectures", "architectures"), ctx.tensor_loc(pre + first, "*.safetensors")],
            )
        return
    if d.format != "zlab-v2":
        return
    layers = sorted({i for i in (layer_index(n) for n in shapes) if i is not None})
    want = expected_v2(d, layers)
    missing = [n for n in want if n not in present]
    wrong = [(n, present[n], w) for n, w in want.items() if n in present and w is not None and present[n] != w]
    if missing:
        yield Violation(
            f"DFlash 2 draft lacks {len(missing)} tensor(s): {', '.join(missing[:4])}"
            f"{' ...' if len(missing) > 4 else ''}",
            [ctx.tensor_loc(pre + n, "*.safetensors") for n in missing[:3]],
        )
    for name, got, w in wrong[:3]:
        yield Violation(
            f"{name} is {quote(got)}, the config (conv_kernel_size {d.conv_kernel_size}, conv_group_size "
            f"{d.conv_group_size}, selector_rank {d.selector_rank}, vocab {d.vocab_size}) implies {w}",
            [ctx.tensor_loc(pre + name, "*.safetensors")],
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
    "`selector_rank`; a v1 loader (architectures DFlashDraftModel) skips them and drafts without the convolutions "
    "the weights were trained with.",
    example='draft {"architectures": ["DFlashDraftModel"]} whose weights hold layers.0.attention_conv.base_kernel',
    fix="Set architectures to DFlash2DraftModel and the dflash_config v2 keys the checkpoint was trained with (or "
    "use the matching revision of the config).",
)
