"""DF120: the draft's MLP activation is not SiLU."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote

HF_QWEN3_MLP = EngineSource("transformers", "transformers/models/qwen3/modeling_qwen3.py", "70-83",
                            "Qwen3MLP: act_fn = ACT2FN[config.hidden_act] (the dflash reference's draft MLP)")
VLLM_SILU_ONLY = EngineSource("vllm", "vllm/model_executor/models/qwen2.py", "105-108",
                              "Unsupported activation: only silu")
SGL_ACTIVATION = EngineSource("sglang", "sglang/srt/models/dflash.py", "493-510",
                              "silu or swigluoai, else ValueError")
MLX_DRAFT_MLP = EngineSource("dflash", "dflash/model_mlx.py", "214", "draft MLP = mlx_lm qwen3 MLP(hidden, "
                             "intermediate); hidden_act is never read")
MLXLM_SWIGLU = EngineSource("mlx-lm", "mlx_lm/models/qwen3.py", "103-111", "MLP computes swiglu (SiLU gate)")


def check(ctx: RuleContext):
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
    why="DFlash drafts are Qwen3-style blocks with a SiLU-gated MLP, and the engines disagree on anything else: "
    "vLLM raises on any value but silu, SGLang accepts silu and swigluoai only, the MLX port always computes SiLU "
    "whatever the field says, and the dflash reference uses the named transformers activation. A draft with another "
    "activation therefore fails on some engines and computes the wrong function on others.",
    example='draft {"hidden_act": "gelu_pytorch_tanh"}',
    fix="Use a draft trained with SiLU; if the value was copied from the target by mistake, set it to 'silu'.",
    sources=(HF_QWEN3_MLP, VLLM_SILU_ONLY, SGL_ACTIVATION, MLX_DRAFT_MLP, MLXLM_SWIGLU),
)
