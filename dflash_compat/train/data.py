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

from dflash_compat.exceptions import InputError, MissingDependencyError, one_line
from dflash_compat.files.safe_read import is_regular_file, parse_json, read_bytes
from dflash_compat.inputs import check_text

__all__ = ["TEXT_SUFFIXES", "read_documents", "TokenData", "tokenize_documents", "pack", "DataSpec",
           "load_training_data", "tokenize_training_data", "TrainingTokens", "record_document", "render_prompt"]

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


def pack(docs: Sequence[Sequence[int]], seq_len: int, eos: Optional[int], min_len: int,
         masks: Optional[Sequence[Sequence[bool]]] = None):
    """Concatenate the documents (EOS between them when the tokenizer has one) and cut the stream
    into sequences of `seq_len`; a last shorter piece of at least `min_len` tokens is padded.
    `masks`: per document, which tokens are trained on (chat data: the assistant's turns; default all).
    -> (ids [N, seq_len] int64, loss mask [N, seq_len] bool), numpy arrays (both trainers read them)."""
    import numpy as np

    stream: list[int] = []
    keep: list[bool] = []
    for i, d in enumerate(docs):
        extra = [eos] if eos is not None else []
        stream += list(d) + extra
        doc_mask = [True] * len(d) if masks is None else [bool(m) for m in masks[i]]
        # the EOS closing a document is trained on where the document's last token is
        keep += doc_mask + ([doc_mask[-1] if doc_mask else False] if extra else [])
    rows, row_masks = [], []
    for start in range(0, len(stream), seq_len):
        piece = stream[start:start + seq_len]
        if len(piece) < min_len:
            break
        pad = seq_len - len(piece)
        rows.append(piece + [piece[-1]] * pad)
        row_masks.append(keep[start:start + seq_len] + [False] * pad)
    if not rows or not any(any(m) for m in row_masks):
        raise InputError(f"--data: too short: {len(stream)} tokens, and training needs at least {min_len} "
                         "(an anchor, its context and a block)" if not rows else
                         "--data: no token to train on (no assistant turn in any conversation)")
    return np.asarray(rows, dtype=np.int64), np.asarray(row_masks, dtype=bool)


# ---------------------------------------------------------------------------------------------
# data as users have it: chat conversations, the `datasets` library (local or Hub, streaming)
# ---------------------------------------------------------------------------------------------

CHAT_FIELDS = ("messages", "conversations", "conversation")
PAIR_FIELDS = (("prompt", "response"), ("prompt", "completion"), ("instruction", "output"))
_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                   "system": "system", "model": "assistant", "tool": "tool"}
DATASET_SUFFIXES = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv", ".arrow": "arrow"}


@dataclass(frozen=True)
class DataSpec:
    """Where the training data comes from: `path` (our reader: text files, a folder of them, JSONL) or
    `dataset` (the `datasets` library: a Hub id, a folder written by save_to_disk, a data file or a folder
    of them), with its `config` name, `split` and `streaming`."""

    path: Optional[str] = None
    dataset: Optional[str] = None
    config: Optional[str] = None
    split: str = "train"
    streaming: bool = False
    responses: Optional[str] = None  # answers to the --data prompts file (vLLM run-batch output), by custom_id

    @property
    def label(self) -> str:
        return f"--data {self.path}" if self.path is not None else f"--dataset {self.dataset}"


Document = Any  # str (plain text) or list[dict] (a conversation: role / content)


def _conversation(messages: Any, where: str) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{where}: the conversation is not a non-empty list of messages")
    turns = []
    for m in messages:
        if not isinstance(m, dict):
            raise InputError(f"{where}: a message is not an object with role and content")
        role = m.get("role", _SHAREGPT_ROLES.get(str(m.get("from", "")).lower()))
        content = m.get("content", m.get("value"))
        if not isinstance(role, str) or not isinstance(content, str):
            raise InputError(f"{where}: a message has no string role/content (or ShareGPT from/value)")
        turns.append({"role": role, "content": check_text(content, where)})
    return turns


def record_document(record: Any, where: str) -> Document:
    """One record -> a document: "text", a conversation ("messages" / "conversations": role/content or
    ShareGPT from/value), or a prompt/response pair (made a two-turn conversation)."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: not an object")
    if isinstance(record.get("text"), str):
        return check_text(record["text"], f"{where}: field \"text\"")
    for name in CHAT_FIELDS:
        if name in record:
            return _conversation(record[name], f"{where}: field \"{name}\"")
    for prompt, answer in PAIR_FIELDS:
        if isinstance(record.get(prompt), str) and isinstance(record.get(answer), str):
            return [{"role": "user", "content": check_text(record[prompt], where)},
                    {"role": "assistant", "content": check_text(record[answer], where)}]
    raise InputError(f"{where} has no string \"text\" field, no conversation ({', '.join(CHAT_FIELDS)}) and no "
                     "prompt/response pair")


def _jsonl_documents(path: Path) -> list[Document]:
    docs: list[Document] = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        if line.strip():
            docs.append(record_document(parse_json(line, what=f"--data {path}: line {n}"), f"--data {path}:{n}"))
    return docs


def _nonempty(doc: Document) -> bool:
    return bool(doc.strip()) if isinstance(doc, str) else any(m["content"].strip() for m in doc)


def _local_documents(data: str, max_documents: Optional[int]) -> list[Document]:
    path = Path(data)
    if not path.exists():
        raise InputError(f"--data {data}: no such file or folder")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES + (".jsonl",) and is_regular_file(p))
        if not files:
            raise InputError(f"--data {data}: the folder holds no {', '.join(TEXT_SUFFIXES)} or .jsonl files")
    else:
        files = [path]
    docs: list[Document] = []
    for f in files:
        docs += _jsonl_documents(f) if f.suffix == ".jsonl" else [_read_text(f)]
        if max_documents is not None and len(docs) >= max_documents:
            docs = docs[:max_documents]
            break
    return docs


def check_dataset_name(spec: DataSpec) -> None:
    """A --dataset that is neither a local path nor a Hub id (owner/name or name), refused before the
    `datasets` library is imported."""
    import re

    name = spec.dataset or ""
    if Path(name).exists():
        return
    if name.startswith((".", "/", "~")) or name.endswith(tuple(DATASET_SUFFIXES)):
        raise InputError(f"--dataset {name}: no such file or folder")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?", name) or ".." in name:
        raise InputError(f"--dataset {name}: not a local path and not a Hugging Face dataset id (owner/name)")


def _open_dataset(spec: DataSpec):
    try:
        import datasets
    except ImportError:
        raise MissingDependencyError("--dataset needs the datasets library: pip install 'dflash-compat[train]'") \
            from None
    name = spec.dataset or ""
    path = Path(name)
    try:
        if path.is_dir() and ((path / "dataset_info.json").is_file() or (path / "state.json").is_file()):
            loaded = datasets.load_from_disk(str(path))  # save_to_disk's Arrow files: a DatasetDict or a Dataset
            if isinstance(loaded, datasets.DatasetDict):
                if spec.split not in loaded:
                    raise InputError(f"--dataset {name}: no split {spec.split!r} (it has {', '.join(loaded)})")
                loaded = loaded[spec.split]
            return loaded.to_iterable_dataset() if spec.streaming else loaded
        if path.is_file():
            builder = DATASET_SUFFIXES.get(path.suffix)
            if builder is None:
                raise InputError(f"--dataset {name}: expected a {', '.join(DATASET_SUFFIXES)} file or a folder")
            return datasets.load_dataset(builder, data_files=str(path), split=spec.split, streaming=spec.streaming)
        return datasets.load_dataset(name, spec.config, split=spec.split, streaming=spec.streaming)
    except InputError:
        raise
    except (ValueError, FileNotFoundError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"--dataset {name}: the datasets library cannot load it ({one_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - datasets / pyarrow / fsspec raise their own classes on bad files
        raise InputError(f"--dataset {name}: the datasets library cannot load it ({one_line(exc)})") from None


def _dataset_documents(spec: DataSpec, max_documents: Optional[int]) -> list[Document]:
    """Records of a `datasets` dataset (streaming: read one by one, up to max_documents)."""
    dataset = _open_dataset(spec)
    docs: list[Document] = []
    try:
        for n, record in enumerate(dataset):
            if max_documents is not None and n >= max_documents:
                break
            docs.append(record_document(record, f"--dataset {spec.dataset}: record {n}"))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bad shard surfaces while iterating
        raise InputError(f"--dataset {spec.dataset}: reading it failed ({one_line(exc)})") from None
    return docs


def load_training_data(data: "str | DataSpec", config: Any) -> list[Document]:
    """The documents of --data or --dataset: plain texts and conversations. Empty ones are dropped; none
    at all is an error."""
    spec = data if isinstance(data, DataSpec) else DataSpec(path=str(data))
    max_documents = getattr(config, "max_documents", None)
    if spec.dataset is not None:
        check_dataset_name(spec)
        docs = _dataset_documents(spec, max_documents)
    elif spec.responses is not None:
        from dflash_compat.train.responses import join_responses, read_responses

        path = Path(str(spec.path))
        if not path.is_file() or path.suffix != ".jsonl":
            raise InputError(f"--data {spec.path}: with --responses, --data is the prompts file (.jsonl) written "
                             "by --write-prompts")
        answers = read_responses(spec.responses)
        requests = [parse_json(line, what=f"--data {path}: line {n}")
                    for n, line in enumerate(_read_text(path).splitlines(), 1) if line.strip()]
        docs = join_responses(requests, answers, f"--data {path}")[:max_documents]
    else:
        docs = _local_documents(str(spec.path), max_documents)
    docs = [d for d in docs if _nonempty(d)]
    if not docs:
        raise InputError(f"{spec.label}: no text in it (empty files or records)")
    return docs


@dataclass
class TrainingTokens:
    """Token ids (and for conversations, which tokens are trained on) of the training documents, the held-out
    documents, and their evaluation prompts."""

    train: list[list[int]]
    train_masks: Optional[list[list[bool]]]
    held_out: list[list[int]]
    held_prompts: list[list[int]]
    summary: dict = field(default_factory=dict)

    def prompts(self) -> list[list[int]]:
        return self.held_prompts or self.held_out

    def eval_prompts(self, tokens: int, count: int) -> list[list[int]]:
        """The held-out tau's prompts: a text's first `tokens` tokens; a conversation's last ones (they end with
        the template's generation prompt, where the reply starts)."""
        cut = (lambda p: p[-tokens:]) if self.held_prompts else (lambda p: p[:tokens])
        return [cut(p) for p in self.prompts() if len(p) >= 4][:count]


def _template_spans(tokenizer: Any, messages: list[dict]) -> tuple[str, list[tuple[int, int]]]:
    """The conversation rendered by the target's chat template, and the character spans of the assistant's
    turns: where rendering the turns before a reply with the generation prompt ends, and rendering it with the
    reply ends (templates that render a conversation as the prefix of a longer one, as chat templates do)."""
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:i], tokenize=False, add_generation_prompt=True) if i else ""
        upto = tokenizer.apply_chat_template(messages[:i + 1], tokenize=False)
        if full.startswith(before) and full.startswith(upto) and len(upto) > len(before):
            spans.append((len(before), len(upto)))
    return full, spans


def render_prompt(tokenizer: Any, messages: list[dict]) -> list[dict]:
    """The turns before the last assistant reply: what a serving engine is asked to answer."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages))
    return messages[:last]


def _chat_tokens(tokenizer: Any, messages: list[dict], where: str) -> tuple[list[int], list[bool], list[int]]:
    """-> (ids, trained-on mask: the assistant's tokens, the evaluation prompt: ids up to the first reply)."""
    try:
        full, spans = _template_spans(tokenizer, messages)
        enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
        prompt_turns = render_prompt(tokenizer, messages[:1 + next((i for i, m in enumerate(messages)
                                                                      if m["role"] == "assistant"), 0)])
        prompt = tokenizer.apply_chat_template(prompt_turns, tokenize=False, add_generation_prompt=True) \
            if prompt_turns else full
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a template's own raise_exception (e.g. roles must alternate)
        raise InputError(f"{where}: the target's chat template refuses it ({one_line(exc)})") from None
    ids = list(enc["input_ids"])
    offsets = enc["offset_mapping"]
    mask = [any(a <= s < b for a, b in spans) for s, _ in offsets] if spans else [True] * len(ids)
    prompt_ids = list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    return ids, mask, prompt_ids


def check_renderable(docs: Sequence[Document], tokenizer: Any) -> None:
    """Conversations need the target's chat template and its fast tokenizer (the offsets that find the
    assistant's tokens): checked before any model is loaded."""
    if not any(isinstance(d, list) for d in docs):
        return
    if not getattr(tokenizer, "chat_template", None):
        raise InputError("the data holds conversations, and the target's tokenizer has no chat template to render "
                         "them with (tokenizer_config.json / chat_template.jinja)")
    if getattr(tokenizer, "is_fast", False) is not True:
        raise InputError("conversations need the target's fast tokenizer (tokenizer.json) to find the assistant's "
                         "tokens")


def tokenize_training_data(docs: Sequence[Document], tokenizer: Any, config: Any, eos: Optional[int]) -> TrainingTokens:
    """Tokenise plain texts as they are and conversations through the target's chat template (trained on the
    assistant's tokens), then keep a seeded share of the documents apart for the held-out tau."""
    held_out, seed = config.held_out, config.seed
    if not any(isinstance(d, list) for d in docs):
        plain = tokenize_documents([str(d) for d in docs], tokenizer, held_out, seed, eos)
        return TrainingTokens(plain.train, None, plain.held_out, [],
                              {"tokens": plain.total_tokens, "held_out_documents": len(plain.held_out),
                               "conversations": 0})
    check_renderable(docs, tokenizer)
    quiet_length_warning(tokenizer)
    rows: list[tuple[list[int], list[bool], list[int]]] = []
    for n, d in enumerate(docs):
        if isinstance(d, list):
            rows.append(_chat_tokens(tokenizer, d, f"conversation {n}"))
        else:
            ids = list(tokenizer(d, add_special_tokens=False)["input_ids"])
            rows.append((ids, [True] * len(ids), []))
    rows = [r for r in rows if r[0]]
    if not rows:
        raise InputError("--data: the tokenizer produces no tokens from it")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_held = max(1, round(len(rows) * held_out)) if len(rows) > 1 else 0
    held = sorted(order[:n_held])
    train = sorted(order[n_held:]) if len(rows) > 1 else [0]
    return TrainingTokens(
        train=[rows[i][0] for i in train], train_masks=[rows[i][1] for i in train],
        held_out=[rows[i][0] for i in held], held_prompts=[rows[i][2] for i in held if rows[i][2]],
        summary={"tokens": sum(len(r[0]) for r in rows), "held_out_documents": len(held),
                 "conversations": sum(isinstance(d, list) for d in docs),
                 "trained_tokens": sum(sum(rows[i][1]) for i in train)})
