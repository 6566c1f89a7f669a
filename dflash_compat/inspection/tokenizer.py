"""The target's tokenizer as llama.cpp's converter will hash it (convert_hf_to_gguf.py get_vocab_base_pre:
AutoTokenizer.from_pretrained(dir).encode(chktxt), SHA-256 of str(ids)), with the build's own text. A
probe: it returns TokenizerFacts or a Skipped, never judges; transformers is imported only here."""

from __future__ import annotations

from hashlib import sha256
from pathlib import Path
from typing import Any, Optional, Union

from dflash_compat.modelfacts import Skipped, TokenizerFacts
from dflash_compat.resolve.refs import Resolved

__all__ = ["read_tokenizer", "target_tokenizer", "pre_tokenizer_name"]

# The tokenizer files the converter's AutoTokenizer reads (fetched for a Hub target, never weights)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                   "vocab.json", "merges.txt")


def pre_tokenizer_name(pre: Any) -> Optional[str]:
    """The llama.cpp pre-tokenizer a tokenizer.json `pre_tokenizer` is, where we can say so: GPT-2's byte-level
    split (ByteLevel with its regex, no prefix space) is llama.cpp's "gpt-2" (src/llama-vocab.cpp). None for
    any other split: naming one we have not compared would tokenize differently in llama.cpp."""
    if isinstance(pre, dict) and pre.get("type") == "Sequence" and isinstance(pre.get("pretokenizers"), list) \
            and len(pre["pretokenizers"]) == 1:
        pre = pre["pretokenizers"][0]
    if isinstance(pre, dict) and pre.get("type") == "ByteLevel" and pre.get("use_regex", True) is True \
            and not pre.get("add_prefix_space", False):
        return "gpt-2"
    return None


def read_tokenizer(folder: Path, chktxt: str) -> Union[TokenizerFacts, Skipped]:
    """The facts of the tokenizer in `folder`, hashed on `chktxt` (the selected build's converter text)."""
    from dflash_compat.exceptions import DFlashCompatError, one_line
    from dflash_compat.files.safe_read import load_json_file

    folder = Path(folder)
    model = pre = None
    if (folder / "tokenizer.json").is_file():
        try:
            data = load_json_file(folder / "tokenizer.json", what=f"{folder.name}/tokenizer.json")
        except DFlashCompatError as e:
            return Skipped("tokenizer-unreadable", one_line(e))
        if isinstance(data, dict):
            model = (data.get("model") or {}).get("type") if isinstance(data.get("model"), dict) else None
            pre = pre_tokenizer_name(data.get("pre_tokenizer"))
    sentencepiece = (folder / "tokenizer.model").is_file()
    facts = TokenizerFacts(folder=str(folder), model=model, sentencepiece=sentencepiece, chkhsh=None,
                           pre_tokenizer=pre)
    if not facts.bpe:
        return facts  # the converter does not hash it
    try:
        import transformers  # noqa: F401 - the converter's own tokenizer loader
    except ImportError:
        return Skipped("transformers-missing", "the converter hashes the tokenizer with transformers' "
                       "AutoTokenizer; pip install dflash-compat[torch]")
    try:
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            ids = AutoTokenizer.from_pretrained(str(folder)).encode(chktxt)
        finally:
            hf_logging.set_verbosity(verbosity)
    except Exception as e:  # noqa: BLE001 - a tokenizer transformers cannot load: the converter cannot either
        return Skipped("tokenizer-error", one_line(e))
    return TokenizerFacts(folder=str(folder), model=model, sentencepiece=sentencepiece,
                          chkhsh=sha256(str(ids).encode()).hexdigest(), pre_tokenizer=pre)


def target_tokenizer(resolved: Resolved, chktxt: str, token: Optional[str] = None) -> Union[TokenizerFacts, Skipped]:
    """read_tokenizer on a target's folder: a local checkpoint as is, a Hub target's tokenizer files fetched
    (never its weights)."""
    from dflash_compat.exceptions import DFlashCompatError, one_line
    from dflash_compat.resolve.refs import download_weights

    try:
        folder = download_weights(resolved, token=token, patterns=TOKENIZER_FILES)
    except DFlashCompatError as e:
        return Skipped("tokenizer-not-fetched", one_line(e))
    return read_tokenizer(folder, chktxt)
