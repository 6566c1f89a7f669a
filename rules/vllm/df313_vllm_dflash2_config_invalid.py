"""DF313: a DFlash 2 draft config lacks what vLLM's DFlash 2 loader indexes, or has a group size it refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int
from dflash_compat.specs import MISSING, get_dotted

# vLLM's DFlash 2 classes read these from `dflash_config` with [] (a KeyError when absent).
REQUIRED = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
# DFlash2-Beam also indexes these.
BEAM_REQUIRED = ("target_layer_ids", "final_logit_softcapping")
DFLASH2 = "DFlash2DraftModel"
BEAM = "DFlash2BeamDraftModel"


SPECULATORS = "speculators-dflash2"


def _nested(ctx: RuleContext, key: str):
    return get_dotted(ctx.draft.raw, f"dflash_config.{key}")


def _speculators(ctx: RuleContext):
    """A speculators-format dflash2 config: vLLM's update_dflash2 rebuilds dflash_config and copies the
    four DFlash 2 keys into it from the top level (an existing nested dflash_config is replaced)."""
    yield from _missing(ctx, REQUIRED, lambda k: get_dotted(ctx.draft.raw, k), lambda k: k,
                        "the speculators config lacks {keys} at the top level: vLLM's update_dflash2 copies "
                        "only top-level keys into dflash_config, and its DFlash 2 loader then stops with a "
                        "KeyError{note}", "dflash_config")
    yield from _group(ctx, get_dotted(ctx.draft.raw, "conv_group_size"), "conv_group_size")


def _missing(ctx, wanted, read, key_of, text, elsewhere):
    missing = [k for k in wanted if read(k) in (MISSING, None)]
    if missing:
        there = [k for k in missing if get_dotted(ctx.draft.raw, f"{elsewhere}.{k}" if elsewhere == "dflash_config"
                                                  else k) not in (MISSING, None)]
        where = "inside dflash_config" if elsewhere == "dflash_config" else "at the top level"
        note = f" ({', '.join(there)} set only {where}, where vLLM does not look)" if there else ""
        yield Violation(text.format(keys=", ".join(missing), note=note), [ctx.dloc(k, key_of(k)) for k in missing])


def _group(ctx: RuleContext, group, key: str):
    hidden = ctx.draft.hidden_size
    if is_int(group) and group > 0 and hidden % group:
        yield Violation(
            f"{key} {group} does not divide hidden_size {hidden}: vLLM stops with "
            f"\"conv_group_size={group} must divide hidden_size={hidden}.\"",
            [ctx.dloc("conv_group_size", key), ctx.dloc("hidden_size")],
        )


def check(ctx: RuleContext):
    d = ctx.draft
    archs = set(d.architectures)
    if d.format == SPECULATORS or get_dotted(d.raw, "speculators_model_type") == "dflash2":
        yield from _speculators(ctx)
        return
    if not archs & {DFLASH2, BEAM}:
        return
    wanted = REQUIRED + (BEAM_REQUIRED if BEAM in archs else ())
    yield from _missing(ctx, wanted, lambda k: _nested(ctx, k), lambda k: f"dflash_config.{k}",
                        "dflash_config lacks {keys}: vLLM's DFlash 2 loader reads each as dflash_config[key] and "
                        "stops with a KeyError{note}", "top")
    yield from _group(ctx, _nested(ctx, "conv_group_size"), "dflash_config.conv_group_size")
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
    "(warning) a positive `output_multiplier`. A speculators-format DFlash 2 config "
    "(`speculators_model_type: dflash2`) has the four keys at the top level instead, where vLLM reads them.",
    why="vLLM builds the grouped convolutions and the candidate selector by indexing `dflash_config` directly: a "
    "missing key, or one written at the top level of a z-lab config, is a KeyError at load. For a "
    "speculators-format config vLLM first rewrites the config (`update_dflash2`): it builds a fresh "
    "`dflash_config` and copies the four keys into it from the top level, so there they belong at the top. The convolution splits the hidden "
    "size into groups and refuses a group size that does not divide it. The output multiplier scales the "
    "candidate logits unchecked (SGLang refuses a non-positive one: DF409).",
    example='draft {"architectures": ["DFlash2DraftModel"], "hidden_size": 4096, "dflash_config": '
    '{"conv_kernel_size": 2, "conv_group_size": 48, "selector_rank": 256, "selector_top_k": 16}}',
    fix="z-lab format: move the DFlash 2 keys into dflash_config; speculators format "
    "(speculators_model_type dflash2): keep them at the top level. Restore their published values from the "
    "draft's training config.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "182-185", "group must divide hidden"),
        EngineSource("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "129-149",
                     "speculators dflash2: the four keys copied from the top level into dflash_config"),
        EngineSource("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "118-122",
                     "update_dflash replaces dflash_config"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "248-259", "conv keys: dflash_config[k]"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "382-387", "selector: dflash_config[k]"),
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "400-405", "output_multiplier: a scale"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py", "194-195", "selector_top_k"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "199-204", "Beam: conv keys"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "357-374", "Beam: ids and selector keys"),
        EngineSource("vllm", "vllm/models/beam/nvidia/dflash2.py", "566", "Beam: final_logit_softcapping"),
    ),
)
