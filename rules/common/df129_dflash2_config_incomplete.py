"""DF129: a DFlash 2 draft config lacks the keys the dflash reference and the MLX port build its modules from."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int

REF_V2_VALUES = EngineSource("dflash", "dflash/model.py", "131-132",
                             "_draft_value: dflash_config[key], else the config attribute, else None")
REF_V2_CONV = EngineSource("dflash", "dflash/model.py", "639-642", "int(conv_kernel_size), int(conv_group_size)")
REF_V2_GROUPS = EngineSource("dflash", "dflash/model.py", "492-499", "hidden_size // conv_group_size kernel groups")
REF_V2_SELECTOR = EngineSource("dflash", "dflash/model.py", "518-519", "int(selector_rank), int(selector_top_k)")
MLX_V2_DEFAULTS = EngineSource("dflash", "dflash/model_mlx.py", "466-469",
                               "conv_kernel_size, conv_group_size, selector_rank, selector_top_k default to 0")

KEYS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")


def check(ctx: RuleContext):
    d = ctx.draft
    if d.format != "zlab-v2":
        return
    missing = [k for k in KEYS if getattr(d, k) is None]
    if missing:
        yield Violation(
            f"DFlash 2 draft config gives no {', '.join(missing)}: the dflash reference stops with a TypeError "
            "(int(None)) building the draft, and the MLX port builds zero-sized modules its weights do not fit",
            [ctx.dloc(k, f"dflash_config.{k}") for k in missing],
        )
    group, hidden = d.conv_group_size, d.hidden_size
    if is_int(group) and group > 0 and is_int(hidden) and hidden % group:
        yield Violation(
            f"dflash_config.conv_group_size {group} does not divide hidden_size {hidden}: the convolution kernels "
            f"are made for {hidden // group} whole groups, so {hidden % group} channels have none",
            [ctx.dloc("conv_group_size", "dflash_config.conv_group_size"), ctx.dloc("hidden_size")],
        )


RULE = Rule(
    code="DF129",
    name="dflash2-config-incomplete",
    severity="error",
    backends=("dflash", "mlx"),
    check=check,
    what="A DFlash 2 draft (`DFlash2DraftModel`) gives `conv_kernel_size`, `conv_group_size`, `selector_rank` and "
    "`selector_top_k` (in `dflash_config`), and its `conv_group_size` divides `hidden_size`. (vLLM's own reading "
    "of these keys is DF313.)",
    why="The dflash reference builds the grouped dynamic convolutions and the candidate selector from these values "
    "and calls int() on each, so a missing one stops the load; the MLX port defaults them to 0 and builds modules "
    "the checkpoint's tensors do not fit. The kernels are projected per group of `conv_group_size` channels, so a "
    "size that does not divide the hidden size leaves channels without a kernel.",
    example='draft {"architectures": ["DFlash2DraftModel"], "dflash_config": {"block_size": 16, ...}} without '
    "conv_kernel_size",
    fix="Restore the DFlash 2 keys from the draft's original repository (they are fixed by its training).",
    sources=(REF_V2_VALUES, REF_V2_CONV, REF_V2_GROUPS, REF_V2_SELECTOR, MLX_V2_DEFAULTS),
)
