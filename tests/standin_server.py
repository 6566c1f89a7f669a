"""Stand-in vLLM / SGLang servers for the probe tests: real HTTP on 127.0.0.1 (port 0, a thread).

Completions come from our reference runtime on a tiny pair; the "draft" is the replay proposer
(the target's own greedy continuation with a controlled error rate), so drafts really accept and
the counters are real: each server keeps its ground truth (`truth`) next to the counters it
exports in the engines' own names and formats (vLLM: prometheus_client counters exactly as
vllm/v1/spec_decode/metrics.py:228-264 and vllm/v1/metrics/loggers.py:499-505 define them; SGLang:
the sglext.spec_tokens_details JSON of srt/entrypoints/openai/protocol.py:455-481, /server_info and
its prometheus counters, srt/observability/metrics_collector.py:1855-1869).

Every server is bounded: it stops itself after `max_requests` requests or `lifetime` seconds.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("vllm", "sglang", "vllm-lossy", "vllm-nospec", "plain", "hang", "garbage", "llamacpp", "llamacpp-nometrics")
# llama-server b11434's counters, in the order and format tools/server/server-task.cpp:1565-1623 writes them
LLAMACPP_COUNTERS = (("spec_decode_num_draft_tokens_total", "draft_tokens", "Speculative: Total draft tokens generated"),
                     ("spec_decode_num_accepted_tokens_total", "accepted",
                      "Speculative: Total draft tokens accepted by the target model"),
                     ("spec_decode_num_drafts_total", "drafts", "Speculative: Total speculative decoding verification "
                      "steps"))


class StandIn:
    def __init__(self, mode: str, reference: Any = None, proposer: Any = None, *, model: str = "tiny",
                 block_size: int = 8, max_requests: int = 60, lifetime: float = 120.0,
                 sglang_metrics: bool = True, sglang_details: bool = True, return_ids: bool = True) -> None:
        assert mode in MODES, mode
        self.mode, self.ref, self.proposer, self.model = mode, reference, proposer, model
        self.block_size, self.max_requests, self.lifetime = block_size, max_requests, lifetime
        self.sglang_metrics, self.sglang_details, self.return_ids = sglang_metrics, sglang_details, return_ids
        self.requests = 0
        self.released = threading.Event()  # frees hanging handlers
        self.lock = threading.Lock()
        self.truth = {"steps": 0, "accepted": 0, "drafted": 0, "verify": 0, "tokens": 0,
                      "per_pos": [0] * (block_size - 1), "histogram": [0] * block_size}
        self._registry()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.started = time.monotonic()

    # ---------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "StandIn":
        self.thread.start()
        threading.Thread(target=self._watchdog, daemon=True).start()
        return self

    def _watchdog(self) -> None:
        while not self.released.is_set():
            if time.monotonic() - self.started > self.lifetime or self.requests >= self.max_requests:
                self.stop()
                return
            time.sleep(0.05)

    def stop(self) -> None:
        self.released.set()
        threading.Thread(target=self.server.shutdown, daemon=True).start()
        self.thread.join(timeout=5)
        self.server.server_close()

    # ---------------------------------------------------------------- counters
    def _registry(self) -> None:
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry()
        self.llama = {"drafts": 0, "draft_tokens": 0, "accepted": 0, "per_pos": [0] * (self.block_size - 1)}
        if self.mode.startswith("llamacpp"):
            return  # llama-server writes its metrics text by hand (metrics_text)
        if self.mode == "sglang":
            labels = {"model_name": self.model, "engine_type": "unified"}
            self.verify_calls = Counter("sglang:spec_verify_calls_total", "Number of speculative decoding verification calls.",
                                        list(labels), registry=self.registry).labels(**labels)
            self.gen_tokens = Counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
                                      [*labels, "is_streaming"], registry=self.registry).labels(**labels, is_streaming="false")
            return
        names = ["model_name", "engine"]
        self.gen_tokens = Counter("vllm:generation_tokens", "Number of generation tokens processed.", names,
                                  registry=self.registry).labels(self.model, "0")
        if self.mode == "vllm-nospec":
            return  # vLLM without a speculative config registers no spec-decode counters
        self.drafts, self.draft_tokens, self.accepted = (
            Counter(name, doc, names, registry=self.registry).labels(self.model, "0") for name, doc in (
                ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.")))
        per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                          [*names, "position"], registry=self.registry)
        self.per_pos = [per_pos.labels(self.model, "0", str(p)) for p in range(self.block_size - 1)]

    def metrics_text(self) -> bytes:
        from prometheus_client import generate_latest

        if self.mode.startswith("llamacpp"):
            out = [f"# HELP llamacpp:n_decode_total Total number of llama_decode() calls\n"
                   f"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total {self.requests}\n"]
            for name, key, doc in LLAMACPP_COUNTERS:
                out.append(f"# HELP llamacpp:{name} {doc}\n# TYPE llamacpp:{name} counter\n"
                           f"llamacpp:{name} {self.llama[key]}\n")
            if any(self.llama["per_pos"]):
                name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
                out.append(f"# HELP {name} Accepted tokens per draft position\n# TYPE {name} counter\n")
                out += [f'{name}{{position="{i}"}} {n}\n' for i, n in enumerate(self.llama["per_pos"])]
            return "".join(out).encode()
        return generate_latest(self.registry)

    # ---------------------------------------------------------------- generation
    def generate(self, prompt: Any, max_tokens: int) -> tuple[list[int], list[int], dict[str, Any]]:
        """-> (prompt ids, output ids, SGLang-style spec details); updates counters and truth."""
        from dflash_compat.liveprobe import reference as rf

        ids = list(prompt) if isinstance(prompt, list) else rf.encode(self.ref, prompt)
        with self.lock:
            if self.mode in ("vllm-nospec", "plain"):
                out = rf.greedy(self.ref, ids, max_tokens)
                self.gen_tokens.inc(len(out))
                return ids, out, {}
            self.proposer.follow(ids + rf.greedy(self.ref, ids, max_tokens + self.block_size))
            result = rf.speculative(self.ref, ids, max_tokens, block_size=self.block_size)
            details = self._count(result)
            out = list(result.tokens)
        if self.mode == "vllm-lossy":  # an engine bug: one committed token is wrong
            i = min(3, len(out) - 1)
            out[i] = (out[i] + 1) % self.ref.vocab_size
        return ids, out, details

    def _count(self, result: Any) -> dict[str, Any]:
        s, t = result.stats, self.truth
        hist = [0] * self.block_size
        for acc, drafted in zip(s.accepted, s.drafted):
            t["verify"] += 1
            hist[acc] += 1
            t["histogram"][acc] += 1
            if drafted == 0:  # a last step with no room to draft: vLLM counts no draft
                continue
            t["steps"] += 1
            t["accepted"] += acc
            t["drafted"] += drafted
            for p in range(acc):
                t["per_pos"][p] += 1
        n = len(result.tokens)
        t["tokens"] += n
        if self.mode == "sglang":
            self.verify_calls.inc(len(s.accepted))
            self.gen_tokens.inc(n)
        elif self.mode.startswith("llamacpp"):
            self.llama["drafts"] += sum(1 for d in s.drafted if d)
            self.llama["draft_tokens"] += sum(s.drafted)
            self.llama["accepted"] += sum(s.accepted)
            for p in range(self.block_size - 1):
                self.llama["per_pos"][p] += sum(1 for a in s.accepted if a > p)
            return {"draft_n": sum(s.drafted), "draft_n_accepted": sum(s.accepted)}
        else:
            self.drafts.inc(sum(1 for d in s.drafted if d))
            self.draft_tokens.inc(sum(s.drafted))
            self.accepted.inc(sum(s.accepted))
            for p in range(self.block_size - 1):
                self.per_pos[p].inc(sum(1 for a in s.accepted if a > p))
            self.gen_tokens.inc(n)
        verify = len(s.accepted)
        return {"spec_accept_rate": sum(s.accepted) / max(verify * (self.block_size - 1), 1),
                "spec_accept_length": n / verify if verify else 0.0, "spec_num_correct_drafts": sum(s.accepted),
                "spec_num_proposed_drafts": verify * (self.block_size - 1), "spec_verify_ct": verify,
                "spec_correct_drafts_histogram": hist}


def refused_url() -> str:
    """A 127.0.0.1 URL whose port has just been released: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _handler(server: StandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def _gate(self) -> bool:
            server.requests += 1
            if server.mode == "hang":
                server.released.wait(server.lifetime)
                return False
            if server.mode == "garbage":
                self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                return False
            return True

        def do_GET(self) -> None:
            if not self._gate():
                return
            if self.path == "/metrics" and server.mode == "llamacpp-nometrics":
                self._json(501, {"error": {"code": 501, "message": "This server does not support metrics endpoint. "
                                           "Start it with `--metrics`", "type": "not_supported_error"}})
            elif self.path == "/metrics" and server.mode != "plain" and (server.mode != "sglang" or server.sglang_metrics):
                self._send(200, server.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            elif self.path == "/props" and server.mode.startswith("llamacpp"):
                self._json(200, {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
                                 "model_path": "t.gguf", "build_info": "b11434-0000000"})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            elif self.path == "/server_info" and server.mode == "sglang":
                self._json(200, {"model_path": "tiny", "speculative_algorithm": "DFLASH",
                                 "speculative_num_draft_tokens": server.block_size, "max_running_requests": 48,
                                 "internal_states": [{"avg_spec_accept_length": None}], "version": "0.5.23"})
            else:
                self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self._gate():
                return
            if self.path == "/completion" and server.mode.startswith("llamacpp"):
                ids, out, timings = server.generate(body["prompt"], int(body.get("n_predict", 16)))
                data = {"index": 0, "content": " ".join(f"w{t}" for t in out), "tokens_predicted": len(out),
                        "tokens_evaluated": len(ids), "stop": True, "model": server.model,
                        "timings": {"prompt_n": len(ids), "predicted_n": len(out), **timings}}
                if body.get("return_tokens"):
                    data["tokens"] = out
                self._json(200, data)
                return
            if self.path != "/v1/completions":
                self._json(404, {"detail": "Not Found"})
                return
            if body.get("model") != server.model:
                self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                return
            ids, out, details = server.generate(body["prompt"], int(body.get("max_tokens", 16)))
            choice: dict[str, Any] = {"index": 0, "text": " ".join(f"w{t}" for t in out), "finish_reason": "length"}
            if body.get("return_token_ids") and server.return_ids:
                choice["token_ids"], choice["prompt_token_ids"] = out, ids
            data: dict[str, Any] = {"id": "cmpl-1", "object": "text_completion", "model": server.model,
                                    "choices": [choice], "usage": {"prompt_tokens": len(ids),
                                                                   "completion_tokens": len(out),
                                                                   "total_tokens": len(ids) + len(out)}}
            if server.mode == "sglang" and server.sglang_details and body.get("return_spec_tokens_details"):
                data["sglext"] = {"spec_tokens_details": details}
            self._json(200, data)

    return Handler
