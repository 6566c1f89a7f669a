"""DF418: SGLang's trtllm_mha draft attention backend is replaced for a draft that is not all-sliding or causal."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    if ctx.options.sglang_draft_attention_backend != "trtllm_mha":
        return
    raw = ctx.draft.raw
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    types = text.get("layer_types", raw.get("layer_types"))
    n = text.get("num_hidden_layers")
    all_sliding = bool(types) and isinstance(types, list) and len(types) == n and set(types) == {"sliding_attention"}
    causal = text.get("is_causal", False) is True
    if all_sliding or causal:
        return
    yield Violation(
        f"--speculative-draft-attention-backend trtllm_mha with a draft whose layers are not all sliding "
        f"(layer_types {quote(types)}) and that is not is_causal: SGLang logs a warning and drafts with its "
        "fallback backend instead (fa4 on SM100 GPUs)",
        [ctx.dloc("layer_types")],
    )


RULE = Rule(
    code="DF418",
    name="sglang-trtllm-mha-draft-fallback",
    severity="info",
    backends=("sglang",),
    check=check,
    reads=("draft_attention_backend",),
    what="Notes `--speculative-draft-attention-backend trtllm_mha` with a draft SGLang does not run on it: "
    "one whose `layer_types` are not all `sliding_attention` (one per layer) and that does not set "
    "`is_causal: true`.",
    why="DFlash drafts attend non-causally within the block; SGLang enables the TensorRT-LLM MHA kernel for "
    "the draft only when every draft layer is sliding or the draft is explicitly causal, and otherwise "
    "replaces it with its fallback backend (fa4 on SM100), with a warning in the log. The server starts; "
    "the backend you asked for is not the one that runs.",
    example='draft {"layer_types": ["full_attention", "full_attention"]}, --speculative-draft-attention-backend '
    'trtllm_mha',
    fix="Expect the fallback backend, or choose it explicitly so the launch says what runs.",
    sources=(
        EngineSource("sglang", "sglang/srt/arg_groups/speculative_hook.py", "945-979",
                     "trtllm_mha kept only for all-sliding or causal drafts, else the fallback"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "388-397", "layer_types read"),
    ),
)
