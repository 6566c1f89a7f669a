"""`probe`: measure a running vLLM / SGLang server from the outside.

Counters before -> greedy completions -> counters after; the difference says whether speculation
ran and how well it accepted, in the engine's own counting. With a local reference target, every
completion is compared token for token with the target's own greedy output.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from dflash_compat.exceptions import InputError
from dflash_compat.liveprobe import metrics as m
from dflash_compat.liveprobe.http import Client, ServerError

__all__ = ["ProbeRequest", "BUILTIN_PROMPTS", "read_prompts", "detect_engine", "run_probe", "first_divergence",
           "compare_with_reference", "probe_exit_code"]

BUILTIN_PROMPTS = (
    "Write a short story about a robot who learns to paint.",
    "Explain in three sentences why the sky is blue.",
    "List the first ten prime numbers and say what makes a number prime.",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
)
MAX_PROMPTS_BYTES = 16 * 1024 * 1024  # prompts for a probe, not a data set
_SETTLE_READS = 4  # counters are re-read until two readings agree (engines record stats asynchronously)
_SETTLE_PAUSE_S = 0.2


@dataclass
class ProbeRequest:
    url: str
    model: str
    prompts: list[dict[str, Any]] = field(default_factory=list)  # {"prompt": str} or {"prompt_ids": [...]}
    max_tokens: int = 128
    timeout: float = 60.0
    engine: str = "auto"


def read_prompts(path: Optional[str]) -> list[dict[str, Any]]:
    """JSONL: each line a string, {"prompt": "..."} or {"prompt_ids": [1, 2, 3]} (optional "max_tokens")."""
    if path is None:
        return [{"prompt": p} for p in BUILTIN_PROMPTS]
    from dflash_compat.files.safe_read import parse_json, read_text

    # a regular file of bounded size: never /dev/zero or a FIFO that blocks
    lines = read_text(path, MAX_PROMPTS_BYTES, what=f"--prompts {path}").splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        item = parse_json(line, what=f"--prompts {path}:{n}")
        out.append(_prompt_item(item, f"--prompts {path}:{n}"))
    if not out:
        raise InputError(f"--prompts {path}: no prompts in it")
    return out


def _prompt_item(item: Any, where: str) -> dict[str, Any]:
    from dflash_compat.inputs import check_text

    if isinstance(item, str) and item:
        return {"prompt": check_text(item, where)}  # JSON's \ud800 escapes: a lone surrogate, named here
    if isinstance(item, dict):
        ids, text, mt = item.get("prompt_ids"), item.get("prompt"), item.get("max_tokens")
        ok_ids = isinstance(ids, list) and ids and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2**31 for i in ids)
        if mt is not None and not (isinstance(mt, int) and not isinstance(mt, bool) and 0 < mt < 2**31):
            raise InputError(f"{where}: max_tokens must be a positive integer below 2**31")
        if isinstance(text, str):
            check_text(text, f"{where}: field \"prompt\"")
        if ok_ids and text is None:
            return {"prompt_ids": ids, **({"max_tokens": mt} if mt else {})}
        if isinstance(text, str) and text and ids is None:
            return {"prompt": text, **({"max_tokens": mt} if mt else {})}
    raise InputError(f"{where}: expected a string, {{\"prompt\": \"...\"}} or {{\"prompt_ids\": [1, 2, 3]}}")


def detect_engine(client: Client) -> tuple[str, dict[str, Any]]:
    """("vllm" | "sglang" | "llama.cpp" | "unknown", SGLang's /server_info or {}). vLLM and llama.cpp are
    known by their `vllm:` / `llamacpp:` metrics (llama-server without --metrics by its /props);
    SGLang by /server_info (srt/entrypoints/http_server.py:863-894)."""
    resp = client.get("/metrics")
    if resp.ok and "vllm:" in resp.text():
        return "vllm", {}
    if resp.ok and "llamacpp:" in resp.text():
        return "llama.cpp", {}
    props = client.get("/props")  # llama-server without --metrics (tools/server/server-context.cpp:4969-4989)
    if props.ok:
        try:
            data = props.json()
        except ServerError:
            data = None
        if isinstance(data, dict) and "default_generation_settings" in data and "build_info" in data:
            return "llama.cpp", {}
    info = client.get("/server_info")
    if info.ok:
        try:
            data = info.json()
        except ServerError:
            data = None
        if isinstance(data, dict) and ("speculative_algorithm" in data or "internal_states" in data):
            return "sglang", data
    return "unknown", {}


def _read_counters(client: Client, engine: str, model: str) -> Optional[m.Counters]:
    resp = client.get("/metrics")
    if not resp.ok:
        return None
    samples = m.parse_prometheus(resp.text())
    if engine == "vllm":
        return m.vllm_counters(samples, model)
    if engine == "sglang":
        return m.sglang_counters(samples, model)
    if engine == "llama.cpp":
        return m.llamacpp_counters(samples, None)  # one model per llama-server: no model label
    return None


def _settled_counters(client: Client, engine: str, model: str) -> Optional[m.Counters]:
    last = _read_counters(client, engine, model)
    for _ in range(_SETTLE_READS - 1):
        time.sleep(_SETTLE_PAUSE_S)
        now = _read_counters(client, engine, model)
        if now is None or last is None or (now.values == last.values and now.per_pos == last.per_pos):
            return now
        last = now
    return last


def _payload(req: ProbeRequest, engine: str, prompt: Any, max_tokens: int) -> dict[str, Any]:
    """Greedy, EOS ignored, the server's token ids returned: vLLM return_token_ids / ignore_eos
    (vllm/entrypoints/openai/completion/protocol.py:85,172); SGLang the same names plus
    return_spec_tokens_details (srt/entrypoints/openai/protocol.py:393-394,407)."""
    body = {"model": req.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "top_p": 1.0,
            "frequency_penalty": 0.0, "presence_penalty": 0.0, "repetition_penalty": 1.0, "ignore_eos": True,
            "return_token_ids": True, "stream": False}
    if engine == "sglang":
        body["return_spec_tokens_details"] = True
    return body


def _complete_llamacpp(client: Client, prompt: Any, max_tokens: int) -> dict[str, Any]:
    """llama-server's native /completion: greedy (top_k 1, temperature 0), EOS ignored, the generated
    token ids returned (return_tokens: tools/server/server-schema.cpp), and `timings` with draft_n /
    draft_n_accepted when it speculated (tools/server/server-common.cpp:99-102)."""
    body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0.0, "top_k": 1, "ignore_eos": True,
            "return_tokens": True, "cache_prompt": False, "stream": False}
    start = time.monotonic()
    data = client.post_json("/completion", body)
    seconds = time.monotonic() - start
    if not isinstance(data, dict) or not isinstance(data.get("content", ""), str):
        raise ServerError(f"{client.endpoint.url('/completion')}: not a llama-server completion answer")
    ids = data.get("tokens")
    ids = ids if isinstance(ids, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in ids) else None
    n = data.get("tokens_predicted")
    n = n if isinstance(n, int) and not isinstance(n, bool) else (len(ids) if ids else 0)
    timings = data.get("timings") if isinstance(data.get("timings"), dict) else None
    return {"text": data.get("content") or "", "token_ids": ids, "completion_tokens": n, "seconds": seconds,
            "spec_details": timings}


def _complete(client: Client, req: ProbeRequest, engine: str, prompt: Any, max_tokens: int) -> dict[str, Any]:
    if engine == "llama.cpp":
        return _complete_llamacpp(client, prompt, max_tokens)
    start = time.monotonic()
    data = client.post_json("/v1/completions", _payload(req, engine, prompt, max_tokens))
    seconds = time.monotonic() - start
    try:
        choice = data["choices"][0]
        text = choice.get("text") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ServerError(f"{client.endpoint.url('/v1/completions')}: the answer has no choices[0] (not an "
                          "OpenAI completions response)") from None
    ids = choice.get("token_ids")
    ids = ids if isinstance(ids, list) and all(isinstance(i, int) for i in ids) else None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    n = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else (len(ids) if ids else 0)
    details = (data.get("sglext") or {}).get("spec_tokens_details") if isinstance(data.get("sglext"), dict) else None
    if isinstance(details, list):
        details = details[0] if details else None
    return {"text": text, "token_ids": ids, "completion_tokens": n, "seconds": seconds, "spec_details": details}


def first_divergence(a: list[int], b: list[int]) -> Optional[int]:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _models(client: Client) -> Optional[list[str]]:
    """The served model names (/v1/models), or None when the server does not list them."""
    resp = client.get("/v1/models")
    if not resp.ok:
        return None
    try:
        data = resp.json()
        return [str(d["id"]) for d in data.get("data", []) if isinstance(d, dict) and "id" in d]
    except (ServerError, AttributeError, TypeError):
        return None


def compare_with_reference(ref: Any, prompt_ids: list[int], out: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """The lossless verdict for one completion: the server's tokens against the reference target's own
    greedy tokens (its token ids when it returned them, else its text re-tokenised by the target's
    tokenizer), and the reference runtime's own acceptance with the draft when one was loaded."""
    from dflash_compat.liveprobe import reference as rf

    expected = rf.greedy(ref, prompt_ids, max_tokens)
    got, how = out["token_ids"], "token ids"
    if got is None:
        if ref.tokenizer is None:
            return {"lossless": None, "compared_by": "not compared: no token ids from the server, no tokenizer here"}
        got = rf.encode(ref, out["text"]) if out["text"] else []
        how = "re-tokenised text (the server returned no token ids)"
    row: dict[str, Any] = {"reference_tokens": expected, "compared_by": how,
                           "lossless": bool(got) and got == expected[: len(got)],
                           "first_divergence": first_divergence(got, expected[: len(got)]) if got else 0}
    if ref.draft is not None:
        row["reference_mean_acceptance"] = float(rf.speculative(ref, prompt_ids, max_tokens).stats.tau)
    return row


def run_probe(req: ProbeRequest, reference: Any = None) -> dict[str, Any]:
    """Probe the server; with `reference` (a serving.reference.Reference) every completion is also
    compared with the target's own greedy output."""
    client = Client(req.url, req.timeout)
    engine, info = (req.engine, {}) if req.engine != "auto" else detect_engine(client)
    if engine == "sglang" and req.engine != "auto":
        info = _server_info(client)
    served = _models(client)
    if served is not None and req.model not in served:
        raise ServerError(f"{client.endpoint.url()}: serves {', '.join(served) or 'no model'}, not {req.model!r} "
                          "(pass --model with one of those names)")
    before = _settled_counters(client, engine, req.model)
    results = []
    for i, item in enumerate(req.prompts):
        max_tokens = item.get("max_tokens", req.max_tokens)
        prompt_ids = item.get("prompt_ids")
        if prompt_ids is None and reference is not None:
            from dflash_compat.liveprobe.reference import encode

            prompt_ids = encode(reference, item["prompt"])  # the server gets the ids we compare against
        sent = prompt_ids if prompt_ids is not None else item["prompt"]
        out = _complete(client, req, engine, sent, max_tokens)
        row = {"prompt_index": i, "prompt": item.get("prompt"), "prompt_tokens": prompt_ids, **out,
               "tokens_per_s": out["completion_tokens"] / out["seconds"] if out["seconds"] > 0 else 0.0,
               "lossless": None, "first_divergence": None, "compared_by": None}
        if reference is not None:
            row.update(compare_with_reference(reference, prompt_ids, out, max_tokens))
        results.append(row)
    after = _settled_counters(client, engine, req.model)
    return _report(req, client, engine, info, served, before, after, results)


def engine_release(client: Client, engine: str, info: dict[str, Any]) -> Optional[dict[str, str]]:
    """The release the server reports (vLLM: GET /version, vllm/entrypoints/serve/instrumentator/basic.py:53-56;
    SGLang: /server_info `version`, srt/entrypoints/http_server.py:888) and the release whose facts read it:
    {"reported", "facts", "status"}; None when the server does not say. The counter names probe reads are
    the same in every bundled vLLM release (vllm/v1/spec_decode/metrics.py:229-231, 255 in 0.32.0-0.34.0)."""
    version: Any = None
    if engine == "vllm":
        resp = client.get("/version")
        try:
            data = resp.json() if resp.ok else {}
        except ServerError:
            data = {}
        version = data.get("version") if isinstance(data, dict) else None
    elif engine == "sglang":
        version = info.get("version")
    if not isinstance(version, str) or not version or len(version) > 64:
        return None
    from dflash_compat.engines.registry import ENGINES, select_versions
    from dflash_compat.exceptions import InputError

    try:
        ENGINES[engine].key(version)
        sel = select_versions(option=(f"{engine}=={version}",), engines=[engine], installed=False)[engine]
    except (ValueError, KeyError, InputError):
        return None  # a build string we cannot order (e.g. a git describe): not judged
    return {"reported": version, "facts": sel.used, "status": sel.status}


def _server_info(client: Client) -> dict[str, Any]:
    resp = client.get("/server_info")
    try:
        data = resp.json() if resp.ok else {}
    except ServerError:
        data = {}
    return data if isinstance(data, dict) else {}


_NO_COUNTERS = {
    "vllm": "no vllm:spec_decode_* counters: the server runs without a speculative config "
            "(vllm/v1/spec_decode/metrics.py:211-213), or with --disable-log-stats, which turns the "
            "Prometheus stat logger off (vllm/v1/engine/async_llm.py:205)",
    "sglang": "no spec_tokens_details in the answers and no sglang:spec_verify_calls counter at /metrics "
              "(launch with --enable-metrics, srt/arg_groups/fields/observability.py:70)",
    "llama.cpp": "no llamacpp:spec_decode_* counters and no timings.draft_n in the answers: launch llama-server "
                 "with --metrics and a draft (-md DRAFT.gguf --spec-type draft-dflash)",
    "unknown": "the server exports no speculative-decoding counters (neither vLLM's /metrics nor SGLang's "
               "/server_info answered as those engines do)",
}


def _report(req, client, engine, info, served, before, after, results) -> dict[str, Any]:
    details = [(r["spec_details"], r["completion_tokens"]) for r in results if r["spec_details"] is not None]
    source = "none"
    if engine == "sglang" and details:
        delta, source = m.sglang_request_counters(details), "per-request spec_tokens_details"
    elif engine == "llama.cpp" and (before is None or after is None) and details:
        delta = m.llamacpp_request_counters(d for d, _ in details)
        source = "per-response timings.draft_n / draft_n_accepted (no /metrics: launch with --metrics)"
    elif before is not None and after is not None:
        delta, source = after.minus(before), "/metrics counters (server-wide: other traffic counts too)"
    else:
        delta = None
    summary = m.summarize_acceptance(delta)
    if delta is None:
        summary["convention"] = _NO_COUNTERS.get(engine, _NO_COUNTERS["unknown"])
    tokens = sum(r["completion_tokens"] for r in results)
    seconds = sum(r["seconds"] for r in results)
    verdicts = [r["lossless"] for r in results]
    summary.update(
        counters_source=source,
        tokens_per_s=tokens / seconds if seconds > 0 else 0.0,
        lossless=None if any(v is None for v in verdicts) else all(verdicts),
        compared_by=next((r["compared_by"] for r in results if r["compared_by"]), None),
    )
    ref_taus = [r["reference_mean_acceptance"] for r in results if r.get("reference_mean_acceptance") is not None]
    summary["reference_mean_acceptance"] = sum(ref_taus) / len(ref_taus) if ref_taus else None
    server = {"url": client.endpoint.url(), "engine": engine, "model": req.model, "served_models": served,
              "speculative": _spec_config(engine, info, after),
              "release": engine_release(client, engine, info) if engine in ("vllm", "sglang") else None}
    return {"schema_version": 1, "server": server, "results": results, "summary": summary}


def _spec_config(engine: str, info: dict[str, Any], counters: Optional[m.Counters]) -> dict[str, Any]:
    """What the server says about its speculative setup (SGLang: resolved ServerArgs fields)."""
    if engine == "sglang":
        keys = ("speculative_algorithm", "speculative_draft_model_path", "speculative_num_draft_tokens",
                "speculative_dflash_block_size", "max_running_requests")
        return {k: info.get(k) for k in keys if k in info}
    if engine in ("vllm", "llama.cpp") and counters is not None and counters.per_pos:
        return {"num_speculative_tokens": len(counters.per_pos)}
    return {}


def probe_exit_code(payload: dict[str, Any], min_acceptance: Optional[float]) -> int:
    """1 when speculation did not run, an output differs from the reference, or tau < min_acceptance."""
    s = payload["summary"]
    if not s["speculation_active"] or s["lossless"] is False:
        return 1
    if min_acceptance is not None and s["mean_acceptance"] < min_acceptance:
        return 1
    return 0
