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
from typing import Any, Callable, Optional, Sequence

from ..exceptions import InputError
from .data import Document, render_prompt

__all__ = ["prompt_requests", "write_prompts", "read_responses", "join_responses", "regenerate_builtin",
           "REGENERATED_FILE", "CUSTOM_ID_PREFIX"]

REGENERATED_FILE = "regenerated.jsonl"
CUSTOM_ID_PREFIX = "dflash-"
MAX_RESPONSES_BYTES = 1 << 30


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
    from ..safe_write import write_output

    write_output(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), force=False)


def _answer(record: dict) -> Optional[str]:
    """The text of one answer line: vLLM run-batch's output (response.body.choices[0].message.content for a
    chat request, .text for a completion) or a plain {"custom_id", "text"} line (the SGLang script's)."""
    if isinstance(record.get("text"), str):
        return record["text"]
    response = record.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    first = choices[0]
    message = first.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return message["content"]
    return first.get("text") if isinstance(first.get("text"), str) else None


def read_responses(path: str) -> dict[str, str]:
    """custom_id -> answer text, from a vLLM run-batch output file or {"custom_id", "text"} lines; failed
    requests (an error, no text) are left out."""
    from ..safe_read import parse_json, read_bytes

    file = Path(path)
    if not file.is_file():
        raise InputError(f"--responses {path}: no such file")
    try:
        text = read_bytes(file, MAX_RESPONSES_BYTES, what=f"--responses {path}").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"--responses {path}: not UTF-8 text (byte {exc.start})") from None
    answers: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = parse_json(line, what=f"--responses {path}: line {n}")
        if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
            raise InputError(f"--responses {path}: line {n} has no string \"custom_id\"")
        answer = _answer(record)
        if answer is not None:
            answers[record["custom_id"]] = answer
    if not answers:
        raise InputError(f"--responses {path}: no answer in it (every line failed or has no text)")
    return answers


def join_responses(requests: Sequence[dict], answers: dict[str, str], where: str) -> list[Document]:
    """Batch requests (the --write-prompts file) + their answers -> training documents: a conversation ending
    in the target's reply, or a text continued by it."""
    docs: list[Document] = []
    for n, request in enumerate(requests, 1):
        body = request.get("body") if isinstance(request, dict) else None
        custom_id = request.get("custom_id") if isinstance(request, dict) else None
        if not isinstance(body, dict) or not isinstance(custom_id, str):
            raise InputError(f"{where}: line {n} is not a batch request (custom_id, body)")
        answer = answers.get(custom_id)
        if answer is None:
            continue
        if isinstance(body.get("messages"), list):
            docs.append(list(body["messages"]) + [{"role": "assistant", "content": answer}])
        elif isinstance(body.get("prompt"), str):
            docs.append(body["prompt"] + answer)
        else:
            raise InputError(f"{where}: line {n} has neither messages nor a prompt in its body")
    if not docs:
        raise InputError(f"{where}: no request has an answer in --responses (custom_id values differ?)")
    return docs


def regenerate_builtin(docs: Sequence[Document], target: Any, tokenizer: Any, max_tokens: int, prompt_tokens: int,
                       stop_ids: Sequence[int]) -> list[Optional[Document]]:
    """The target's greedy answers through our torch runtime: each conversation's last reply replaced, each
    text's continuation after its first prompt_tokens tokens. -> one entry per document (None: no prompt)."""
    from ..runtime.torch_generate import greedy_generate

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
    from ..safe_write import write_output

    lines = [json.dumps({"messages": d} if isinstance(d, list) else {"text": d}, ensure_ascii=False) for d in docs]
    write_output(path, "\n".join(lines) + "\n", force=True)
