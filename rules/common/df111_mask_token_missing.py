"""DF111: the draft does not say which token fills the unknown block positions."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import (
    MLX_LOAD_DRAFT,
    REF_DRAFT_INIT,
    SGL_MASK_CONFIG,
    SGL_MASK_RESOLVE,
    VLLM_MASK_V1,
    VLLM_MASK_V2,
)
from dflash_compat.specs import get_dotted

REF_MASK_FILL = EngineSource("dflash", "dflash/model.py", "197-199", "output ids pre-filled with mask_token_id")
SPECULATORS_MASK = EngineSource("vllm", "vllm/transformers_utils/configs/speculators/algos.py", "118-119",
                                "config_dict['mask_token_id']: KeyError when absent")
# SGLang's default `dflash_config.mask_token` (sglang/srt/speculative/dflash_utils.py:27).
SGLANG_DEFAULT_MASK = "<|MASK|>"


def _sglang(ctx: RuleContext) -> Violation:
    t = ctx.target
    named = [get_dotted(ctx.draft.raw, k) for k in ("dflash_config.mask_token", "mask_token")]
    token = next((n for n in named if isinstance(n, str) and n), SGLANG_DEFAULT_MASK)
    loc = [ctx.dloc("mask_token_id", "dflash_config.mask_token_id")]
    if t.mask_token == token and t.mask_token_id is not None:
        return Violation(f"SGLang resolves mask token {quote(token)} through the target tokenizer: id {t.mask_token_id}; "
                         "check it is the id the draft was trained with", loc, backends=("sglang",), severity="info")
    return Violation(
        f"SGLang resolves mask token {quote(token)} through the target tokenizer: its vocabulary id if it has one, "
        "otherwise it adds the token (a new id; ValueError if that is past the embedding rows), whichever id the "
        "draft was trained with", loc, backends=("sglang",), severity="warning",
    )


def check(ctx: RuleContext):
    d = ctx.draft
    if d.mask_token_id is not None:
        return
    if d.is_speculators:
        yield Violation("draft config has no `mask_token_id`: vLLM's speculators reader indexes it and fails with "
                        "KeyError", [ctx.dloc("mask_token_id", "mask_token_id")], backends=("vllm",))
        return
    hint = ""
    if ctx.target.mask_token_id is not None:
        hint = f" (the target tokenizer's mask token {quote(ctx.target.mask_token)} is id {ctx.target.mask_token_id})"
    yield Violation(
        f"draft config has no `dflash_config.mask_token_id`{hint}: the dflash reference fills the block with "
        "None and fails, vLLM raises ValueError, the MLX loader KeyError",
        [ctx.dloc("mask_token_id", "dflash_config.mask_token_id")],
        backends=("dflash", "vllm", "mlx"),
    )
    yield _sglang(ctx)


RULE = Rule(
    code="DF111",
    name="mask-token-missing",
    severity="error",
    backends=("dflash", "vllm", "sglang", "mlx"),
    check=check,
    what="The draft config gives `dflash_config.mask_token_id` (or a top-level `mask_token_id`; speculators: "
    "top-level `mask_token_id`).",
    why="Every block is `[anchor, mask, mask, ...]`, embedded with the target's table, and the id must be the one "
    "the draft was trained with. Without it the dflash reference builds its output buffer from None and fails, "
    "vLLM raises ValueError, and the MLX loader (nested key only) fails with KeyError. SGLang does not fail: it "
    "looks `dflash_config.mask_token` (default `<|MASK|>`) up in the target tokenizer, or adds it as a new token, "
    "and drafts with whatever id that gives.",
    example='draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}} (no mask_token_id)',
    fix="Restore the mask token id from the draft's training config (often the tokenizer's mask token or a "
    "reserved row); guessing a different one loses most of the acceptance.",
    sources=(REF_DRAFT_INIT, REF_MASK_FILL, VLLM_MASK_V1, VLLM_MASK_V2, SPECULATORS_MASK, MLX_LOAD_DRAFT,
             SGL_MASK_CONFIG, SGL_MASK_RESOLVE),
)
