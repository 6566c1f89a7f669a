"""Self-distillation data: the target's own answers to the data's prompts.

The recipe trains the draft on what the target says, so the responses of the data are replaced by the
target's. Three ways to get them, all starting from the same prompts:

- `train --regenerate`: the built-in runtime (greedy, our torch runtime) answers each prompt before the
  run; the result is OUT/regenerated.jsonl, which a resumed run reads again. Right for small targets.
- `train --write-prompts FILE`: the prompts as an OpenAI batch input file (one request per line:
  custom_id, method, url /v1/chat/completions or /v1/completions, body), which `vllm run-batch` answers
  as is; an SGLang offline Engine script does the same (docs/training.md). Then
  `train --data FILE --responses ANSWERS.jsonl` trains on the prompts joined with the answers by custom_id.

Prompts: for a conversation, the turns before its last assistant reply; for a plain text, its first
`prompt_tokens` tokens (the reply continues it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

from dflash_compat.exceptions import InputError
from dflash_compat.train.data import Document, render_prompt

__all__ = ["prompt_requests", "write_prompts", "regenerate_builtin", "write_documents", "REGENERATED_FILE",
           "CUSTOM_ID_PREFIX"]

REGENERATED_FILE = "regenerated.jsonl"
CUSTOM_ID_PREFIX = "dflash-"


def _text_prompt(tokenizer: Any, text: str, prompt_tokens: int) -> str:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][:prompt_tokens]
    return tokenizer.decode(ids)


def prompt_requests(docs: Sequence[Document], tokenizer: Any, model: str, max_tokens: int,
                    prompt_tokens: int) -> list[dict]:
    """One OpenAI batch request per document (greedy: temperature 0)."""
    lines = []
    for i, doc in enumerate(docs):
        custom_id = f"{CUSTOM_ID_PREFIX}{i}"
        if isinstance(doc, list):
            turns = render_prompt(tokenizer, doc)
            if not turns:
                continue
            body = {"model": model, "messages": turns, "max_tokens": max_tokens, "temperature": 0}
            url = "/v1/chat/completions"
        else:
            body = {"model": model, "prompt": _text_prompt(tokenizer, doc, prompt_tokens), "max_tokens": max_tokens,
                    "temperature": 0}
            url = "/v1/completions"
        lines.append({"custom_id": custom_id, "method": "POST", "url": url, "body": body})
    if not lines:
        raise InputError("--write-prompts: no prompt in the data (conversations need a turn before the reply)")
    return lines


def write_prompts(path: Path, requests: Sequence[dict]) -> None:
    from dflash_compat.files.safe_write import write_output

    write_output(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), force=False)


def regenerate_builtin(docs: Sequence[Document], target: Any, tokenizer: Any, max_tokens: int, prompt_tokens: int,
                       stop_ids: Sequence[int]) -> list[Optional[Document]]:
    """The target's greedy answers through our torch runtime: each conversation's last reply replaced, each
    text's continuation after its first prompt_tokens tokens. -> one entry per document (None: no prompt)."""
    from dflash_compat.runtime.torch_generate import greedy_generate

    stops = set(stop_ids)
    out: list[Optional[Document]] = []
    for doc in docs:
        if isinstance(doc, list):
            turns = render_prompt(tokenizer, doc)
            rendered = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True) if turns else ""
            ids = list(tokenizer(rendered, add_special_tokens=False)["input_ids"]) if turns else []
        else:
            ids = list(tokenizer(doc, add_special_tokens=False)["input_ids"])[:prompt_tokens]
        if not ids:
            out.append(None)
            continue
        result = greedy_generate(target, ids, max_new_tokens=max_tokens, stop_token_ids=list(stop_ids), timed=False)
        answer = tokenizer.decode([t for t in result.tokens if t not in stops])
        out.append(turns + [{"role": "assistant", "content": answer}] if isinstance(doc, list)
                   else tokenizer.decode(ids) + answer)
    return out


def write_documents(path: Path, docs: Sequence[Document]) -> None:
    """Documents as JSONL our reader takes back: {"text"} or {"messages"}."""
    from dflash_compat.files.safe_write import write_output

    lines = [json.dumps({"messages": d} if isinstance(d, list) else {"text": d}, ensure_ascii=False) for d in docs]
    write_output(path, "\n".join(lines) + "\n", force=True)
