"""Answers from a serving engine's offline batch run, joined with the prompts `train --write-prompts` wrote.

    vllm run-batch -i prompts.jsonl -o answers.jsonl --model TARGET     (vLLM 0.34.0's OpenAI batch runner)
    dflash-check train TARGET --data prompts.jsonl --responses answers.jsonl ...

The answers file: vLLM run-batch's output lines (custom_id, response.body.choices[0]: message.content for a
chat request, text for a completion; vllm/entrypoints/launchers/run_batch.py:244-256 in vLLM 0.34.0), or
plain {"custom_id", "text"} lines (what the SGLang script in docs/training.md writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from dflash_compat.exceptions import InputError

__all__ = ["read_responses", "join_responses"]

MAX_RESPONSES_BYTES = 1 << 30
Document = Any  # str (plain text) or list[dict] (a conversation), as data.Document


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
    from dflash_compat.files.safe_read import parse_json, read_bytes

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
