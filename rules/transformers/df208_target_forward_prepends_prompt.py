"""DF208: the target's forward prepends its own prompt positions and slices its cache itself, so the dflash
reference's block-by-block verify with a cropped cache cannot drive it."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation

HF_CPMANT_PROMPT = EngineSource(
    "transformers", "transformers/models/cpmant/modeling_cpmant.py", "612-622",
    "CpmAntModel.forward prepends prompt_length virtual prompt ids to every call's input_ids", version="5.25.0")
HF_CPMANT_SLICE = EngineSource(
    "transformers", "transformers/models/cpmant/modeling_cpmant.py", "633-647",
    "the cache length (prompt_length + tokens) is sliced off this call's own positions", version="5.25.0")
HF_CPMANT_FULL_IDS = EngineSource(
    "transformers", "transformers/models/cpmant/modeling_cpmant.py", "702-704",
    "generation passes the full input_ids: forward slices off the cached prefix itself", version="5.25.0")
DFLASH_VERIFY = EngineSource("dflash", "dflash/model.py", "269-272",
                             "the verify forward passes only the block's ids with the target cache")
DFLASH_CROP = EngineSource("dflash", "dflash/model.py", "152-154",
                           "_crop_to crops the target cache to a token count")

# model_type -> the config key holding the positions its forward prepends
PREPENDS = {"cpmant": "prompt_length"}


def check(ctx: RuleContext):
    t = ctx.target
    key = PREPENDS.get(t.model_type or "")
    if key is None or t.text_prefix:
        return
    n = t.raw.get(key)
    yield Violation(
        f"model_type {t.model_type!r}'s forward prepends {n if isinstance(n, int) else 'its'} virtual prompt "
        f"positions (`{key}`) to every call and slices its cache off its own input ({HF_CPMANT_PROMPT.cite()}, "
        f"{HF_CPMANT_SLICE.cite()}): its cache holds more positions than tokens and it needs the full input_ids "
        f"each call, while the dflash reference verifies one block with the cache and crops the cache to a token "
        f"count ({DFLASH_VERIFY.cite()}, {DFLASH_CROP.cite()}), so the reference stops with a shape error",
        [ctx.tloc("model_type", key="model_type")],
    )


RULE = Rule(
    code="DF208",
    name="target-forward-prepends-prompt",
    severity="error",
    backends=("dflash",),
    check=check,
    what="The target's forward takes the ids it is given at the positions after its cache: its model_type is "
    "not one whose forward prepends its own virtual prompt and slices its cache itself (cpmant).",
    why="CPM-Ant (CpmAntModel.forward) puts `prompt_length` prompt ids before every call's input_ids, so its "
    "cache holds prompt_length more positions than tokens, and a cached call drops the first cache-length "
    "positions of its own (prompt + input): it expects the full input_ids every time (transformers' "
    "prepare_inputs passes them). The dflash reference passes only the verified block with the cache and crops "
    "the cache to a token count: the masks and hidden states no longer line up (RuntimeError: size of tensor a "
    "(3) must match the size of tensor b (27)), and smoke's mirror of it would see a cache of the wrong length.",
    example='target {"model_type": "cpmant", "prompt_length": 32} with backend dflash',
    fix="Use a target whose forward takes cached positions as given (a standard causal LM), or run the pair with "
    "transformers' own generate(speculation_type=\"dflash\") where it supports the model.",
    sources=(HF_CPMANT_PROMPT, HF_CPMANT_SLICE, HF_CPMANT_FULL_IDS, DFLASH_VERIFY, DFLASH_CROP),
)
