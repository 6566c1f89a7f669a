"""DF201: the target keeps recurrent state that cropping a KV cache cannot roll back."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._common import NATIVE_RECURRENT_ROLLBACK, model_type_loc
from dflash_compat.rules._sources import (
    HF_LINEAR_CROP,
    HF_STATEFUL,
    MLX_GDN,
    REF_CACHE,
    REF_VERIFY,
    SGL_HYBRID,
    VLLM_HYBRID,
)

HF_NATIVE_HISTORY = EngineSource(
    "transformers", "transformers/cache_utils.py", "1162-1207",
    "5.25.0: activate_past_recording(recurrent_states_to_keep=...) records recurrent states; crop(-n) restores them",
    version="5.25.0")
HF_NATIVE_TARGET_RECORDING = EngineSource(
    "transformers", "transformers/generation/utils.py", "4002",
    "5.25.0: assisted decoding activates past recording on the target cache before verifying", version="5.25.0")




def _native(ctx: RuleContext, cache, which: str, locs):
    """transformers' own generate(speculation_type="dflash") on a recurrent target, at the judged release."""
    version = ctx.version("transformers")
    if not ctx.engine("transformers").feature("recurrent_rollback"):
        # the refusal tests the model class's _is_stateful, read per release (UnknownFact where it is unknown)
        stateful = set(ctx.engine("transformers").facts["stateful_model_types"])
        t = ctx.target
        if stateful & {t.model_type, t.text_model_type}:
            yield Violation(
                f"transformers {version} refuses this target in generate(speculation_type=\"dflash\"): {which}, "
                "and assisted generation is not supported with stateful models (transformers "
                f"{NATIVE_RECURRENT_ROLLBACK} and later roll the state back)",
                locs, backends=("transformers",))
        else:
            yield Violation(
                f"{which}: transformers {version} does not mark this model type stateful, so generate("
                "speculation_type=\"dflash\") runs it, but it records no recurrent-state history and the crop "
                f"after each verify cannot roll that state back: output is not lossless (transformers "
                f"{NATIVE_RECURRENT_ROLLBACK} and later roll the state back)",
                locs, backends=("transformers",))
        return
    if cache is None:
        yield Violation(
            f"{which}: transformers {version} rolls a recurrent state back only for model types whose code "
            "records it per step; the module tree was not inspected, so that is not judged here",
            locs, backends=("transformers",), severity="warning")
        return
    if cache.recurrent_history and not cache.model_managed:
        return  # the model's code keeps the per-step history the crop restores from
    yield Violation(
        f"{which}, and its modeling code in transformers {version} keeps no per-step history of that state "
        "(it never asks the cache get_recurrent_states_to_keep()), so the crop after each verify cannot roll "
        "it back: output is not lossless",
        locs, backends=("transformers",))


def check(ctx: RuleContext):
    """The reference's verdict (backend `dflash`), then the native path's at the judged transformers release."""
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
    if ctx.engine("transformers").feature("recurrent_rollback"):
        how = ("on transformers 5.25.0 and later the reference's activate_past_recording() leaves "
               "recurrent_states_to_keep at None, which the model's recurrent update cannot take (TypeError: dflash "
               "0.1.0 dflash/model.py:146-149, transformers cache_utils.py:1944-1950)")
    else:
        how = "rejected draft tokens stay in that state and output is not lossless"
    yield Violation(
        f"target cannot be rolled back by cropping its cache: {which}; the dflash reference records no "
        f"recurrent-state history: {how}",
        locs, backends=("dflash",),
    )
    yield from _native(ctx, cache, which, locs)


RULE = Rule(
    code="DF201",
    name="target-cache-not-croppable",
    severity="error",
    backends=("transformers", "dflash"),
    check=check,
    what="The runtime can roll the target's recurrent, state-space or linear-attention layers (Qwen3-Next, "
    "Qwen3.5, Jamba, Bamba, FalconH1, Zamba, LFM2, Mamba, Nemotron-H, ...) back after a rejected draft token. "
    "`dflash` (the reference): never, for a recurrent state. `transformers` (native generate): refused before "
    "5.25.0; from 5.25.0, for the model types whose code records the state per step.",
    why="After each verify step the dflash reference crops the target's cache back to the accepted length "
    "(dflash 0.1.0 dflash/model.py:146-154, activate_past_recording() without a history of recurrent states). A "
    "linear-attention / recurrent cache layer crops only its convolution state; the recurrent state has already "
    "absorbed the rejected tokens, so the output drifts from the target's own greedy output without an error. "
    "transformers' own assisted generation refuses stateful models in 5.24.0 (generation/utils.py:1885-1890); "
    "5.25.0 drops that check, activates past recording with recurrent_states_to_keep on the target cache "
    "(generation/utils.py:4002) and restores the state on crop (cache_utils.py:1162-1207), which works where the "
    "model's code records the history (it calls get_recurrent_states_to_keep: Qwen3.5, Qwen3-Next, Jamba, "
    "Falcon-H1, Nemotron-H, Bamba, Granite-4.0-H, Mamba, Mamba-2, Zamba2, ...; not Zamba, RecurrentGemma, RWKV, "
    "xLSTM).",
    example='target {"model_type": "qwen3_next", "layer_types": ["linear_attention", "linear_attention", '
    '"linear_attention", "full_attention"]}',
    fix="Serve this target with an engine that rolls recurrent state back (vLLM; SGLang, whose DFLASH worker "
    "commits the accepted state itself; MLX for qwen3_5), or use a pure-attention target.",
    sources=(REF_CACHE, REF_VERIFY, HF_LINEAR_CROP, HF_STATEFUL, HF_NATIVE_HISTORY, HF_NATIVE_TARGET_RECORDING,
             VLLM_HYBRID, SGL_HYBRID, MLX_GDN),
)
