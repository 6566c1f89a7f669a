"""DF313: a DFlash 2 draft config lacks what vLLM's DFlash 2 loader indexes, or has a group size it refuses."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, EngineSource, Rule, Violation
from dflash_compat.specs._reader import MISSING, get_dotted

from ._common import is_int

# vLLM's DFlash 2 classes read these from `dflash_config` with [] (a KeyError when absent).
REQUIRED = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
# DFlash2-Beam also indexes these.
BEAM_REQUIRED = ("target_layer_ids", "final_logit_softcapping")
DFLASH2 = "DFlash2DraftModel"
BEAM = "DFlash2BeamDraftModel"


def _nested(ctx: CheckContext, key: str):
    return get_dotted(ctx.draft.raw, f"dflash_config.{key}")


def check(ctx: CheckContext):
    d = ctx.draft
    archs = set(d.architectures)
    if not archs & {DFLASH2, BEAM}:
        return
    wanted = REQUIRED + (BEAM_REQUIRED if BEAM in archs else ())
    missing = [k for k in wanted if _nested(ctx, k) in (MISSING, None)]
    if missing:
        top = [k for k in missing if get_dotted(d.raw, k) not in (MISSING, None)]
        note = f" ({', '.join(top)} set only at the top level, where vLLM does not look)" if top else ""
        yield Violation(
            f"dflash_config lacks {', '.join(missing)}: vLLM's DFlash 2 loader reads each as dflash_config[key] and "
            f"stops with a KeyError{note}",
            [ctx.dloc(k, f"dflash_config.{k}") for k in missing],
        )
    group, hidden = _nested(ctx, "conv_group_size"), d.hidden_size
    if is_int(group) and group > 0 and hidden % group:
        yield Violation(
            f"dflash_config.conv_group_size {group} does not divide hidden_size {hidden}: vLLM stops with "
            f"\"conv_group_size={group} must divide hidden_size={hidden}.\"",
            [ctx.dloc("conv_group_size", "dflash_config.conv_group_size"), ctx.dloc("hidden_size")],
        )
    mult = _nested(ctx, "output_multiplier")
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and mult <= 0:
        yield Violation(
            f"dflash_config.output_multiplier {mult} <= 0: vLLM scales the DFlash 2 candidate logits by it without "
            "a check, which inverts or flattens the draft's ranking",
            [ctx.dloc("output_multiplier", "dflash_config.output_multiplier")],
            severity="warning",
        )


RULE = Rule(
    code="DF313",
    name="vllm-dflash2-config-invalid",
    severity="error",
    backends=("vllm",),
    check=check,
    what="A DFlash 2 draft (`DFlash2DraftModel`, `DFlash2BeamDraftModel`) has `conv_kernel_size`, "
    "`conv_group_size`, `selector_rank` and `selector_top_k` inside `dflash_config` (Beam also "
    "`target_layer_ids` and `final_logit_softcapping`), a `conv_group_size` that divides `hidden_size`, and "
    "(warning) a positive `output_multiplier`.",
    why="vLLM builds the grouped convolutions and the candidate selector by indexing `dflash_config` directly: a "
    "missing key, or one written at the top level, is a KeyError at load. The convolution splits the hidden "
    "size into groups and refuses a group size that does not divide it. The output multiplier scales the "
    "candidate logits unchecked (SGLang refuses a non-positive one: DF409).",
    example='draft {"architectures": ["DFlash2DraftModel"], "hidden_size": 4096, "dflash_config": '
    '{"conv_kernel_size": 2, "conv_group_size": 48, "selector_rank": 256, "selector_top_k": 16}}',
    fix="Move the DFlash 2 keys into dflash_config and restore their published values from the draft's "
    "training config.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "182-185", "group must divide hidden"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "248-259", "conv keys: dflash_config[k]"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "382-387", "selector: dflash_config[k]"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "400-405", "output_multiplier: a scale"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py", "194-195", "selector_top_k"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "199-204", "Beam: conv keys"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "357-374", "Beam: ids and selector keys"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "566", "Beam: final_logit_softcapping"),
    ),
)
