"""Training data: text files, a folder of them, or JSONL with a "text" field, tokenised with the
target's tokenizer into fixed-length sequences, with held-out documents for evaluation.

Every problem with the data is one InputError line naming the file: a missing path, a FIFO or a device
(refused, never waited on), a file over MAX_DATA_FILE_BYTES, an empty file, text that is not UTF-8, a
JSONL line that is not bounded JSON (safe_read) or has no "text", too few tokens to train on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from dflash_compat.exceptions import InputError
from dflash_compat.files.safe_read import is_regular_file, parse_json, read_bytes
from dflash_compat.inputs import check_text

__all__ = ["TEXT_SUFFIXES", "read_documents", "TokenData", "tokenize_documents", "pack"]

TEXT_SUFFIXES = (".txt", ".py", ".md")
# One data file is read whole into memory (and its tokens into Python lists, ~40x its size): 1 GiB of
# text is more than the compact trainer can hold; a larger corpus goes in as a folder of files.
MAX_DATA_FILE_BYTES = 1 << 30


def _read_text(path: Path) -> str:
    """A bounded read of a regular file (a FIFO, a device or /dev/zero is refused, never waited on)."""
    try:
        data = read_bytes(path, MAX_DATA_FILE_BYTES, what=f"--data {path}")
    except InputError as exc:
        if "more than" in str(exc):
            raise InputError(f"{exc}; split it into a folder of smaller files") from None
        raise
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"--data {path}: not UTF-8 text (byte {exc.start}); convert it or leave it out") from None


def _jsonl(path: Path) -> list[str]:
    docs = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        # parse_json: a syntax error, deep nesting or a 10,000-digit number is one line, never a traceback
        record = parse_json(line, what=f"--data {path}: line {n}")
        text = record.get("text") if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise InputError(f"--data {path}: line {n} has no string \"text\" field")
        docs.append(check_text(text, f"--data {path}:{n}: field \"text\""))  # JSON's \ud800 escapes
    return docs


def read_documents(data: str | Path, max_documents: Optional[int] = None) -> list[str]:
    """The documents of `data`: one per text file (a folder is read recursively, sorted by path),
    one per JSONL record. Empty documents are dropped; no documents at all is an error."""
    path = Path(data)
    if not path.exists():
        raise InputError(f"--data {data}: no such file or folder")
    if path.is_dir():
        # regular files only (stat, never open): a FIFO or a device among them is skipped, never waited on
        files = sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES + (".jsonl",) and is_regular_file(p))
        if not files:
            raise InputError(f"--data {data}: the folder holds no {', '.join(TEXT_SUFFIXES)} or .jsonl files")
    else:
        files = [path]
    docs: list[str] = []
    for f in files:
        docs += _jsonl(f) if f.suffix == ".jsonl" else [_read_text(f)]
        if max_documents is not None and len(docs) >= max_documents:
            docs = docs[:max_documents]
            break
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise InputError(f"--data {data}: no text in it (empty files or records)")
    return docs


@dataclass
class TokenData:
    """Token ids of the training and held-out documents."""

    train: list[list[int]]
    held_out: list[list[int]]
    eos: Optional[int] = None
    total_tokens: int = 0
    notes: list[str] = field(default_factory=list)


# transformers warns once per tokenizer that a text is longer than model_max_length ("Token indices sequence
# length is longer than the specified maximum sequence length ... will result in indexing errors") and then
# sets this flag (transformers 5.25.0 tokenization_utils_base.py:3000-3018). A whole document is tokenised
# here and `pack` cuts it into --seq-len pieces, so no sequence that long ever reaches the model.
_LENGTH_WARNING = "sequence-length-is-longer-than-the-specified-maximum"


def quiet_length_warning(tokenizer: Any) -> None:
    """Mark the too-long-sequence warning as already given, on this tokenizer only."""
    flags = getattr(tokenizer, "deprecation_warnings", None)
    if isinstance(flags, dict):
        flags[_LENGTH_WARNING] = True


def tokenize_documents(docs: Sequence[str], tokenizer: Any, held_out: float, seed: int,
                       eos: Optional[int]) -> TokenData:
    """Tokenise, then keep a seeded `held_out` share of the documents apart (at least one); a single
    document is split at (1 - held_out) of its tokens instead."""
    quiet_length_warning(tokenizer)
    ids = [list(tokenizer(d, add_special_tokens=False)["input_ids"]) for d in docs]
    ids = [t for t in ids if t]
    total = sum(len(t) for t in ids)
    if not ids:
        raise InputError("--data: the tokenizer produces no tokens from it")
    if len(ids) == 1:
        cut = int(len(ids[0]) * (1 - held_out))
        train, held = [ids[0][:cut]], [ids[0][cut:]]
    else:
        order = list(range(len(ids)))
        random.Random(seed).shuffle(order)
        n_held = max(1, round(len(ids) * held_out))
        held = [ids[i] for i in sorted(order[:n_held])]
        train = [ids[i] for i in sorted(order[n_held:])]
    return TokenData(train=train, held_out=held, eos=eos, total_tokens=total)


def pack(docs: Sequence[Sequence[int]], seq_len: int, eos: Optional[int], min_len: int):
    """Concatenate the documents (EOS between them when the tokenizer has one) and cut the stream
    into sequences of `seq_len`; a last shorter piece of at least `min_len` tokens is padded.
    -> (ids [N, seq_len] long, loss mask [N, seq_len] bool)."""
    import torch

    stream: list[int] = []
    for d in docs:
        stream += list(d) + ([eos] if eos is not None else [])
    rows, masks = [], []
    for start in range(0, len(stream), seq_len):
        piece = stream[start:start + seq_len]
        if len(piece) < min_len:
            break
        pad = seq_len - len(piece)
        rows.append(piece + [piece[-1]] * pad)
        masks.append([True] * len(piece) + [False] * pad)
    if not rows:
        raise InputError(f"--data: too short: {len(stream)} tokens, and training needs at least {min_len} "
                         "(an anchor, its context and a block)")
    return torch.tensor(rows, dtype=torch.long), torch.tensor(masks, dtype=torch.bool)
