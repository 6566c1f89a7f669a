"""DF201: the target keeps recurrent state that cropping a KV cache cannot roll back."""

from __future__ import annotations

from dflash_compat.engine import CheckContext, EngineSource, Rule, Violation
from dflash_compat.quoting import quote

from ._common import model_type_loc
from ._sources import HF_LINEAR_CROP, HF_STATEFUL, MLX_GDN, REF_CACHE, REF_VERIFY

SGL_HYBRID = EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "2085-2130",
                         "DFLASH commits a hybrid target's mamba / linear-attention state after verify itself")
VLLM_HYBRID = EngineSource("vllm", "vllm/model_executor/layers/mamba/mamba_mixer2.py", "780-942",
                          "recurrent state kept per accepted token (num_accepted_tokens)")


def check(ctx: CheckContext):
    t = ctx.target
    if not t.is_hybrid:
        return
    cache = ctx.tree.cache if ctx.has("modules") and ctx.tree.framework != "mlx" else None
    if cache is not None and cache.rollback == "crop":
        return  # the built transformers cache says cropping is exact (e.g. LFM2 with past-state recording)
    model_type = t.text_model_type or t.model_type
    if t.recurrent_layers:
        n = t.num_hidden_layers or "?"
        which = f"{len(t.recurrent_layers)} of its {n} layers are recurrent / linear-attention"
        locs = [ctx.tloc("layer_types")] if "layer_types" in t.sources else []
    else:
        which = f"model_type {quote(model_type)} has recurrent / state-space layers"
        locs = []
    yield Violation(
        f"target cannot be rolled back by cropping its cache: {which}; rejected draft tokens would stay in "
        "their state, so output is not lossless",
        [*locs, model_type_loc(ctx)],
    )


RULE = Rule(
    code="DF201",
    name="target-cache-not-croppable",
    severity="error",
    backends=("transformers",),
    check=check,
    what="The target has no recurrent, state-space or linear-attention layers (Qwen3-Next, Qwen3.5, Jamba, Bamba, "
    "FalconH1, Zamba, LFM2, Mamba, Nemotron-H, ...), judged from `model_type` and per-layer type lists.",
    why="After each verify step the dflash reference crops the target's cache back to the accepted length. In "
    "transformers 5.24 a linear-attention / recurrent cache layer crops only its convolution state; the recurrent "
    "state has already absorbed the rejected tokens, so the output drifts from the target's own greedy output "
    "without an error. (transformers' own assisted generation refuses stateful models outright.)",
    example='target {"model_type": "qwen3_next", "layer_types": ["linear_attention", "linear_attention", '
    '"linear_attention", "full_attention"]}',
    fix="Serve this target with an engine that rolls recurrent state back (vLLM; SGLang, whose DFLASH worker "
    "commits the accepted state itself; MLX for qwen3_5), or use a pure-attention target.",
    sources=(REF_CACHE, REF_VERIFY, HF_LINEAR_CROP, HF_STATEFUL, VLLM_HYBRID, SGL_HYBRID, MLX_GDN),
)
