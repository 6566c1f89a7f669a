"""DF205: the draft's RoPE is one that the reference runtime (`dflash-check smoke`) does not implement."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_QWEN3_ROPE, MLX_ROPE
from dflash_compat.specs.runtime_support import RUNTIME_ROPE_TYPES, draft_rope_unsupported

HF_DYNAMIC_ROPE = EngineSource("transformers", "transformers/modeling_rope_utils.py", "34-130",
                               "dynamic / longrope: inverse frequencies recomputed from the sequence length")
HF_PARTIAL_SCALED = EngineSource("transformers", "transformers/modeling_rope_utils.py", "179-181",
                                 "scaled RoPE: frequencies for int(head_dim * partial_rotary_factor) dims")
MLXLM_DYNAMIC_ROPE = EngineSource("mlx-lm", "mlx_lm/models/rope_utils.py", "309-356",
                                  "initialize_rope: dynamic (DynamicNTKScalingRoPE) and longrope (SuScaledRoPE)")
MLXLM_OLD_ROPE = EngineSource("mlx-lm", "mlx_lm/models/rope_utils.py", "307-308", "0.31: no dynamic branch; "
                              "initialize_rope raises Unsupported RoPE type", version="0.31.3")


def check(ctx: RuleContext):
    found = draft_rope_unsupported(ctx.draft)
    if found is None:
        return
    key, why = found
    yield Violation(
        f"the draft's RoPE is {why}: the reference runtime of `dflash-check smoke` implements "
        f"{', '.join(RUNTIME_ROPE_TYPES)} rotations only, so smoke refuses this draft (what each engine does "
        "with it is the other rules' business)",
        [ctx.dloc(key, key)],
    )


RULE = Rule(
    code="DF205",
    name="runtime-draft-rope-unsupported",
    severity="warning",
    backends=("dflash", "mlx"),
    check=check,
    what="The draft's rotary embedding is one the reference runtime (`dflash-check smoke`, PyTorch and MLX) "
    "implements: RoPE type default, linear, yarn, llama3 or proportional, no `mrope_section`, and a "
    "`partial_rotary_factor` only with the default or proportional type (the default rotates the whole head, as "
    "the dflash reference and the MLX port do; DF127 says where engines differ).",
    why="The runtime computes its cos/sin tables once, for fixed frequencies: dynamic and longrope RoPE change "
    "them with the sequence length, a multimodal RoPE splits the head by section, and transformers' scaled "
    "initialisers narrow the frequencies to the partial width, which a whole-head rotation cannot use. Rather "
    "than rotate differently from the engines, `dflash-check smoke` refuses such a draft before loading any "
    "weights, with this finding; the check reports it as a warning because it is a limit of dflash-check's own "
    "runtime, not of an engine.",
    example='draft {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}',
    fix="Run the pair on an engine instead of `dflash-check smoke` (the other findings say which ones load it), "
    "or, if the draft was trained without this RoPE setting, correct its config.",
    sources=(HF_QWEN3_ROPE, HF_DYNAMIC_ROPE, HF_PARTIAL_SCALED, MLX_ROPE, MLXLM_DYNAMIC_ROPE, MLXLM_OLD_ROPE),
)
