"""Small helpers shared by the config-level rules (not rules themselves: no RULE here)."""

from __future__ import annotations

from typing import Any

from dflash_compat.checker import Location, RuleContext

__all__ = ["is_int", "model_type_loc", "disagreeing_locations", "text_int",
           "NATIVE_RECURRENT_ROLLBACK"]

# transformers' native DFlash rolls a recurrent target back from this release on: 5.24.0 refuses stateful
# models in assisted generation (generation/utils.py:1885-1890); 5.25.0 drops that check and restores
# recurrent states from a per-step history (cache_utils.py:1162-1207, generation/utils.py:4002).
NATIVE_RECURRENT_ROLLBACK = "5.25.0"


def is_int(value: Any) -> bool:
    """A JSON integer (bool is an int subclass in Python, but not a layer id or a token id)."""
    return isinstance(value, int) and not isinstance(value, bool)


def text_int(ctx: RuleContext, key: str) -> tuple[str, Any]:
    """(the dotted key, its integer value or None) of a key of the target's text config as config.json has it
    (`text_config.KEY` for a wrapper), for keys the specs do not model."""
    from dflash_compat.specs import get_dotted

    t = ctx.target
    dotted = f"{t.text_prefix}.{key}" if t.text_prefix else key
    value = get_dotted(t.raw, dotted)
    return dotted, value if is_int(value) else None


def model_type_loc(ctx: RuleContext) -> Location:
    """The key that holds the model type a message names: `text_config.model_type` for wrappers."""
    if ctx.target.text_model_type:
        return ctx.tloc("text_model_type")
    return ctx.tloc("model_type", "model_type")


def disagreeing_locations(ctx: RuleContext, field: str, locations: dict[str, Any], nested_key: str,
                          what: str, readers: str, others: str):
    """DF114 / DF116: one draft setting written under two keys with different values."""
    from dflash_compat.checker import Violation
    from dflash_compat.quoting import quote

    if len({repr(v) for v in locations.values()}) < 2:
        return
    listed = ", ".join(f"{k}={quote(v)}" for k, v in locations.items())
    yield Violation(
        f"{what} disagree: {listed}; {readers} use {quote(locations.get(nested_key, '?'))}, {others} the other one",
        [ctx.dloc(field, k) for k in locations],
    )


# The draft formats some engine's loader reads each key for. Elsewhere no engine reads it, so a missing key
# changes nothing: the Muse Glimmer assistant's logits are the target head's, raw, in transformers
# (HF_NATIVE_LOGITS), vLLM (its DFlash v1 model, VLLM_V1_LOGITS) and SGLang (a DFlash v1 alias); speculators,
# XPress, LiLiCorr, Laguna and Domino drafts are loaded by DFlash v1 models or their own, which read none.
_ZLAB = frozenset({"zlab-v1", "zlab-v2"})  # the dflash reference and its MLX port (REF_*, MLX_SCALES)
_DFLASH2 = frozenset({"dflash2-beam", "minimax-dflash2"})  # SGLang DFlash2DraftModel aliases (SGL_V2_LOGITS)
READ_BY = {
    "input_embedding_scale": _ZLAB,  # + vLLM DFlash 2 (VLLM_V2_EMBED)
    "output_multiplier": _ZLAB | _DFLASH2,  # + vLLM DFlash 2 (VLLM_V2_LOGITS)
    "final_logit_softcapping": _ZLAB | _DFLASH2,  # + vLLM DFlash2-Beam (VLLM_BEAM_SOFTCAP)
}
