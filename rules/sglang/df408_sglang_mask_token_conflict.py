"""DF408: the draft's mask_token_id disagrees with the id the target tokenizer gives the draft's mask token."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.specs import get_dotted

DEFAULT_MASK_TOKEN = "<|MASK|>"  # SGLang's default when the draft names no mask token


def mask_token(raw: dict) -> tuple[str, str]:
    """The mask token string SGLang resolves, and the key it came from (dflash_config first)."""
    for key in ("dflash_config.mask_token", "mask_token"):
        value = get_dotted(raw, key)
        if isinstance(value, str) and value:
            return value, key
    return DEFAULT_MASK_TOKEN, ""


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    token, key = mask_token(d.raw)
    if d.mask_token_id is None or t.mask_token != token or t.mask_token_id is None:
        return  # the tokenizer facts we read cover only its declared mask token
    if t.mask_token_id == d.mask_token_id:
        return
    named = f"the draft's mask_token {quote(token)} ({key})" if key else f"SGLang's default mask token {quote(token)}"
    yield Violation(
        f"mask_token_id {d.mask_token_id} != {t.mask_token_id}, the target tokenizer's id for {named}: SGLang stops "
        "at start-up (\"DFLASH config mismatch: dflash_config.mask_token_id conflicts with tokenizer vocab id\")",
        [ctx.dloc("mask_token_id"), ctx.tloc("mask_token_id", "tokenizer_config.json:mask_token")],
    )


RULE = Rule(
    code="DF408",
    name="sglang-mask-token-conflict",
    severity="error",
    backends=("sglang",),
    check=check,
    what="When the target's tokenizer declares the mask token SGLang looks for (the draft's `mask_token`, default "
    "`<|MASK|>`), its id equals the draft's `mask_token_id`.",
    why="SGLang resolves the DFlash mask token by name as well as by id: with a `mask_token_id` it looks the "
    "token's name up in the target tokenizer's vocabulary and refuses to start when the two ids differ. Without "
    "a `mask_token_id` it takes the tokenizer's id (adding the token when missing), and a `mask_embedding.pt` in "
    "the draft folder must carry that same id.",
    example='target tokenizer_config {"mask_token": "<|MASK|>", "added_tokens_decoder": {"151670": {"content": '
    '"<|MASK|>"}}}, draft {"dflash_config": {"mask_token_id": 151669}}',
    fix="Keep the mask token id the draft was trained with. If that is the draft's value and the tokenizer's token "
    "of that name is another row, set dflash_config.mask_token to the name of the draft's mask token.",
    sources=(
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "677-700", "mask_token (default <|MASK|>), id"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1391-1471", "id checked against vocab"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_worker_v2.py", "1318-1344", "mask_embedding.pt id"),
    ),
)
