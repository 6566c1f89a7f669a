"""Choosing a safe mask token for a new draft from the target's tokenizer files (pure Python).

The mask token fills the block positions the draft has to guess. It must be a row of the target's
embedding table that never appears as real text: not EOS / a stop token, not pad, not BOS, not a
token the chat template or the vision pipeline writes. In order of preference:

1. the mask token the tokenizer declares (`mask_token`);
2. a special token named as a mask (`<mask>`, `[MASK]`, `<|mask|>`);
3. an unused reserved special token (`<|reserved_special_token_0|>`, `<unused0>`, ...);
4. an embedding row past the tokenizer's last token, where the embedding is padded (Qwen3: the
   tokenizer ends at 151668, the table has 151936 rows);
else there is none, and the caller says how to add one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from dflash_compat.exceptions import ConfigError
from dflash_compat.specs import TargetSpec
from dflash_compat.specs._reader import get_dotted

__all__ = ["TokenizerFacts", "MaskChoice", "read_tokenizer_facts", "choose_mask_token", "unsafe_ids",
           "check_mask_token",
           "NO_MASK_HINT"]

_MASK_NAME = re.compile(r"^(<\|?mask\|?>|\[mask\])$", re.IGNORECASE)
_RESERVED_NAME = re.compile(r"reserved|unused", re.IGNORECASE)
_SPECIAL_KEYS = ("eos_token", "pad_token", "bos_token", "unk_token", "sep_token", "cls_token")
NO_MASK_HINT = (
    "add one to the tokenizer and the target (tokenizer.add_special_tokens({'mask_token': '<|mask|>'}); "
    "model.resize_token_embeddings(len(tokenizer))) or pass --mask-token-id M"
)


@dataclass
class TokenizerFacts:
    """What the tokenizer files say about special tokens; ids not known stay absent."""

    added: dict[int, str] = field(default_factory=dict)  # id -> content, added / special tokens
    named: dict[str, str] = field(default_factory=dict)  # "eos_token" -> "<|im_end|>", "mask_token" -> ...
    size: Optional[int] = None  # tokens the tokenizer can produce (largest id + 1), when known
    size_from: str = ""  # how `size` was found, for the message
    chat_template: str = ""

    def id_of(self, content: str) -> Optional[int]:
        return next((i for i, c in sorted(self.added.items()) if c == content), None)


@dataclass(frozen=True)
class MaskChoice:
    token_id: int
    reason: str  # one phrase, shown to the user


def _content(value: Any) -> Optional[str]:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def read_tokenizer_facts(tokenizer_config: Optional[dict], tokenizer_json: Optional[dict],
                         chat_template: str = "") -> TokenizerFacts:
    """Collect special tokens from tokenizer_config.json and tokenizer.json (either may be None)."""
    facts = TokenizerFacts(chat_template=chat_template)
    tc = tokenizer_config if isinstance(tokenizer_config, dict) else {}
    decoder = tc.get("added_tokens_decoder")
    if isinstance(decoder, dict):
        for key, entry in decoder.items():
            content = _content(entry)
            if content is not None and str(key).isdigit():
                facts.added[int(key)] = content
    for key in (*_SPECIAL_KEYS, "mask_token"):
        content = _content(tc.get(key))
        if content is not None:
            facts.named[key] = content
    template = tc.get("chat_template")
    if isinstance(template, list):  # [{"name": ..., "template": ...}]
        template = " ".join(str(t.get("template", "")) for t in template if isinstance(t, dict))
    if isinstance(template, str):
        facts.chat_template += template
    tj = tokenizer_json if isinstance(tokenizer_json, dict) else {}
    for entry in tj.get("added_tokens") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int) and isinstance(entry.get("content"), str):
            facts.added.setdefault(entry["id"], entry["content"])
    _tokenizer_size(facts, tj)
    return facts


def _tokenizer_size(facts: TokenizerFacts, tj: dict) -> None:
    vocab = get_dotted(tj, "model.vocab")
    ids: list[int] = []
    if isinstance(vocab, dict):
        ids = [v for v in vocab.values() if isinstance(v, int)]
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], ids are positions
        ids = [len(vocab) - 1] if vocab else []
    if ids:
        facts.size = max(ids + list(facts.added)) + 1
        facts.size_from = "tokenizer.json"
        return
    # No vocabulary to read: trust the added tokens only in the layout where they are appended
    # after the base vocabulary as one contiguous run (GPT-2 / Qwen / Llama-3 BPE tokenizers).
    # Tokenizers with specials at the start (SentencePiece: 0, 1, 2) tell nothing about the end.
    added = sorted(facts.added)
    if added and added[0] > 255 and added == list(range(added[0], added[-1] + 1)):
        facts.size = added[-1] + 1
        facts.size_from = "its added tokens, which end the vocabulary"


def unsafe_ids(target: TargetSpec, facts: TokenizerFacts) -> dict[int, str]:
    """Ids a mask token must not take, with the role that rules each out."""
    bad: dict[int, str] = {}
    for i in target.eos_token_ids:
        bad.setdefault(i, "an EOS / stop token")
    for role, value in (("the pad token", target.pad_token_id), ("the BOS token", target.bos_token_id)):
        for i in value if isinstance(value, list) else [value]:
            if isinstance(i, int) and not isinstance(i, bool):
                bad.setdefault(i, role)
    for key in _SPECIAL_KEYS:
        tid = facts.id_of(facts.named[key]) if key in facts.named else None
        if tid is not None:
            bad.setdefault(tid, f"the tokenizer's {key}")
    for key, value in _token_id_keys(target.raw):
        for i in value if isinstance(value, list) else [value]:
            if isinstance(i, int) and not isinstance(i, bool):
                bad.setdefault(i, f"`{key}` in config.json")
    for tid, content in facts.added.items():
        if content and content in facts.chat_template:
            bad.setdefault(tid, "used by the chat template")
    return bad


def _token_id_keys(raw: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every `*_token_id(s)` / `*_token_index` key, nested configs included."""
    out: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            dotted = f"{prefix}{key}"
            if isinstance(value, dict):
                out += _token_id_keys(value, dotted + ".")
            elif isinstance(key, str) and key.endswith(("token_id", "token_ids", "token_index")):
                out.append((dotted, value))
    return out


def choose_mask_token(target: TargetSpec, facts: TokenizerFacts) -> MaskChoice:
    """The safest mask token id for `target`; ConfigError (one line, with the fix) when none exists."""
    vocab = target.vocab_size
    if vocab is None:
        raise ConfigError(f"target {target.source}: `{target.key('vocab_size')}` is required to choose a mask token")
    bad = unsafe_ids(target, facts)

    def usable(tid: Optional[int]) -> bool:
        return tid is not None and 0 <= tid < vocab and tid not in bad

    declared = facts.named.get("mask_token")
    tid = facts.id_of(declared) if declared else target.mask_token_id
    if usable(tid):
        return MaskChoice(tid, f"the tokenizer's mask token {declared or ''}".rstrip())
    for tid, content in sorted(facts.added.items()):
        if _MASK_NAME.match(content.strip()) and usable(tid):
            return MaskChoice(tid, f"the tokenizer's special token {content}")
    for tid, content in sorted(facts.added.items()):
        if _RESERVED_NAME.search(content) and usable(tid):
            return MaskChoice(tid, f"the unused reserved token {content}")
    if facts.size is not None and facts.size < vocab and usable(facts.size):
        return MaskChoice(facts.size, f"the first embedding row past the tokenizer's {facts.size} tokens "
                                      f"(from {facts.size_from}; the embedding has {vocab} rows)")
    if not facts.added and facts.size is None:
        raise ConfigError(
            f"target {target.source}: no tokenizer files (tokenizer_config.json / tokenizer.json), so no token id "
            "is known to be unused; pass --mask-token-id M with an id the tokenizer never produces"
        )
    raise ConfigError(
        f"target {target.source}: no safe mask token (no mask token, no unused reserved token, no spare "
        f"embedding row); {NO_MASK_HINT}"
    )


def check_mask_token(target: TargetSpec, facts: TokenizerFacts, tid: int) -> None:
    """A mask token id given by the user: a row of the embedding, and not a token real text uses."""
    vocab = target.vocab_size
    if vocab is not None and not 0 <= tid < vocab:
        raise ConfigError(f"--mask-token-id {tid} is not a row of the target's embedding (0..{vocab - 1})")
    role = unsafe_ids(target, facts).get(tid)
    if role is not None:
        raise ConfigError(f"--mask-token-id {tid} is {role}: the draft would confuse it with real text; "
                          "choose an unused reserved token")

