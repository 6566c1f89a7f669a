"""DF201: the target keeps recurrent state that cropping a KV cache cannot roll back."""

from __future__ import annotations

from dflash_compat.engine import BACKENDS, CheckContext, EngineSource, Rule, Violation
from dflash_compat.quoting import quote

from ._common import model_type_loc
from ._sources import HF_LINEAR_CROP, HF_ROLLBACK, HF_ROLLBACK_CROP, HF_STATEFUL, MLX_GDN, REF_CACHE, REF_VERIFY

SGL_HYBRID = EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "2085-2130",
                         "DFLASH commits a hybrid target's mamba / linear-attention state after verify itself")
# The backend of transformers' own generate(speculation_type="dflash") and the one of the dflash reference
# runtime; before the backends were split both were "transformers".
NATIVE = "transformers"
REFERENCE = "dflash" if "dflash" in BACKENDS else "transformers"
VLLM_HYBRID = EngineSource("vllm", "vllm/model_executor/layers/mamba/mamba_mixer2.py", "780-942",
                          "recurrent state kept per accepted token (num_accepted_tokens)")


def check(ctx: CheckContext):
    yield from verdicts(ctx, NATIVE, REFERENCE)


def verdicts(ctx: CheckContext, native: str, reference: str):
    """The native path's verdict (per transformers release) for `native`, the reference's for `reference`."""
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
    locs = [*locs, model_type_loc(ctx)]
    hf = ctx.version("transformers")
    if reference != native:  # transformers' own generate: what this transformers release does
        if ctx.feature("transformers", "recurrent_rollback"):
            pass  # records the drafted tokens' recurrent states and restores the accepted one: lossless
        elif model_type in ctx.facts("transformers").get("stateful_model_types", ()) and \
                ctx.feature("transformers", "assisted_refuses_stateful"):
            yield Violation(
                f"target cannot be rolled back by cropping its cache: {which}; transformers {hf} refuses "
                "assisted generation with it (\"assisted generation is not supported with stateful models\"); "
                "transformers 5.25 and later roll the recurrent state back",
                locs, backends=(native,),
                fix="Upgrade to transformers >= 5.25 (it rolls recurrent state back), or serve this target with "
                "vLLM or SGLang.")
        else:
            yield Violation(
                f"target cannot be rolled back by cropping its cache: {which}; transformers {hf} crops only the "
                "convolution state, so rejected draft tokens stay in the recurrent state and output is not lossless",
                locs, backends=(native,))
    yield Violation(
        f"target cannot be rolled back by cropping its cache: {which}; the dflash reference crops its cache after "
        "each verify step, so rejected draft tokens would stay in the recurrent state and output is not lossless"
        + (f" (transformers {hf} would roll it back in its own generate(speculation_type=\"dflash\"))"
           if reference == native and ctx.feature("transformers", "recurrent_rollback") else ""),
        locs, backends=(reference,),
    )


RULE = Rule(
    code="DF201",
    name="target-cache-not-croppable",
    severity="error",
    backends=tuple(dict.fromkeys((NATIVE, REFERENCE))),
    check=check,
    what="The target has no recurrent, state-space or linear-attention layers (Qwen3-Next, Qwen3.5, Jamba, Bamba, "
    "FalconH1, Zamba, LFM2, Mamba, Nemotron-H, ...), judged from `model_type` and per-layer type lists.",
    why="After each verify step the dflash reference crops the target's cache back to the accepted length. A "
    "linear-attention / recurrent cache layer crops only its convolution state unless it recorded the drafted "
    "tokens' states; the reference does not ask it to, so the recurrent state keeps the rejected tokens and the "
    "output drifts from the target's own greedy output without an error. transformers' own assisted generation "
    "depends on the release: up to 5.24 it refuses `_is_stateful` models (Mamba, Qwen3-Next, Qwen3.5, ...); "
    "from 5.25 it records the recurrent states of the drafted tokens and restores the accepted one, so it is "
    "lossless and this rule says nothing for it.",
    example='target {"model_type": "qwen3_next", "layer_types": ["linear_attention", "linear_attention", '
    '"linear_attention", "full_attention"]}',
    fix="Serve this target with an engine that rolls recurrent state back (vLLM; SGLang, whose DFLASH worker "
    "commits the accepted state itself; MLX for qwen3_5), or use a pure-attention target.",
    sources=(REF_CACHE, REF_VERIFY, HF_LINEAR_CROP, HF_STATEFUL, HF_ROLLBACK, HF_ROLLBACK_CROP, VLLM_HYBRID,
             SGL_HYBRID, MLX_GDN),
)
