"""The engines' own speculative-decoding counters: Prometheus text, SGLang's per-request details, and
the acceptance summary computed from them with each engine's counting convention (standard library only).

vLLM 0.33.0 (vllm/v1/spec_decode/metrics.py): counters `vllm:spec_decode_num_drafts`,
`vllm:spec_decode_num_draft_tokens`, `vllm:spec_decode_num_accepted_tokens` (lines 228-232) and
`vllm:spec_decode_num_accepted_tokens_per_pos` with a `position` label (lines 253-264), labelled
`model_name`, `engine` (vllm/v1/metrics/loggers.py:499-505), exposed with prometheus_client's
`_total` suffix at `/metrics` (vllm/entrypoints/serve/instrumentator/metrics.py:77). Mean acceptance
length = 1 + accepted / drafts (metrics.py:113-114, 185-190); per position = accepted_per_pos / drafts
(metrics.py:192-195).

SGLang 0.5.23: per request, `return_spec_tokens_details` puts `sglext.spec_tokens_details` in the
completion (srt/entrypoints/openai/protocol.py:393,455-481) with `spec_verify_ct`,
`spec_num_correct_drafts` (accepted drafts, bonus excluded: srt/managers/schedule_batch.py:1364-1368),
`spec_correct_drafts_histogram` (steps by accepted drafts: schedule_batch.py:1566-1572) and
`spec_accept_length` = completion_tokens / verify_ct, bonus and the prefill's first token included
(srt/managers/tokenizer_manager.py:3165-3168). Server-wide with `--enable-metrics`: counters
`sglang:spec_verify_calls_total` and `sglang:generation_tokens_total`
(srt/observability/metrics_collector.py:1855-1869, 2109-2112).

llama.cpp b11434 (llama-server with `--metrics`): counters `llamacpp:spec_decode_num_drafts_total` (verify
steps), `..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and
`..._num_accepted_tokens_per_pos_total{position="i"}` (tools/server/server-task.cpp:1565-1573, 1618-1623);
per response `timings.draft_n` / `timings.draft_n_accepted` (tools/server/server-common.cpp:99-102).
Mean acceptance length = 1 + accepted / drafts, as vLLM counts it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

__all__ = [
    "parse_prometheus", "Counters", "vllm_counters", "sglang_counters", "sglang_request_counters",
    "summarize_acceptance", "VLLM_NAMES", "SGLANG_NAMES", "LLAMACPP_NAMES", "CONVENTIONS", "llamacpp_counters",
    "llamacpp_request_counters",
]

Samples = dict[str, list[tuple[dict[str, str], float]]]

VLLM_NAMES = {
    "drafts": "vllm:spec_decode_num_drafts",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "accepted": "vllm:spec_decode_num_accepted_tokens",
    "accepted_per_pos": "vllm:spec_decode_num_accepted_tokens_per_pos",
    "generation_tokens": "vllm:generation_tokens",  # vllm/v1/metrics/loggers.py:798-800
}
SGLANG_NAMES = {
    "verify_calls": "sglang:spec_verify_calls",
    "generation_tokens": "sglang:generation_tokens",
}
LLAMACPP_NAMES = {
    "drafts": "llamacpp:spec_decode_num_drafts",
    "draft_tokens": "llamacpp:spec_decode_num_draft_tokens",
    "accepted": "llamacpp:spec_decode_num_accepted_tokens",
    "accepted_per_pos": "llamacpp:spec_decode_num_accepted_tokens_per_pos",
}
CONVENTIONS = {
    "vllm": "tau = 1 + accepted draft tokens / drafts: tokens per target verify step, bonus included "
            "(vllm/v1/spec_decode/metrics.py:113-114)",
    "sglang": "tau = completion tokens / verify steps, bonus and the prefill's first token included "
              "(sglang srt/managers/tokenizer_manager.py:3165-3168)",
    "llama.cpp": "tau = 1 + accepted draft tokens / drafts (verify steps): tokens per target verify step, bonus "
                 "included (llama.cpp b11434 tools/server/server-task.cpp:1565-1573)",
    "llama.cpp-timings": "no verify-step count without /metrics: acceptance rate = timings.draft_n_accepted / "
                         "timings.draft_n (llama.cpp b11434 tools/server/server-common.cpp:99-102)",
}

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value: str) -> str:
    return value.replace("\\\\", "\0").replace('\\"', '"').replace("\\n", "\n").replace("\0", "\\")


def parse_prometheus(text: str) -> Samples:
    """Prometheus text exposition (0.0.4) -> {sample name: [(labels, value), ...]}. Comment lines and
    lines that do not parse are skipped (an exporter's other metrics never break the probe)."""
    out: Samples = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, labels_text, value_text = m.group(1), m.group(2), m.group(3)
        labels: dict[str, str] = {}
        if labels_text:
            inner = labels_text[1:-1]
            pos = 0
            while pos < len(inner):
                lm = _LABEL.match(inner, pos)
                if not lm:
                    break
                labels[lm.group(1)] = _unescape(lm.group(2))
                pos = lm.end()
        try:
            value = float(value_text)
        except ValueError:
            continue
        out.setdefault(name, []).append((labels, value))
    return out


def _series(samples: Samples, base: str, model: Optional[str]) -> list[tuple[dict[str, str], float]]:
    """A counter's samples: `base_total` (prometheus_client's name for counters), else `base`. When
    some samples carry `model_name` == model, only those count (one server, several models)."""
    rows = samples.get(base + "_total") or samples.get(base) or []
    mine = [r for r in rows if model is not None and r[0].get("model_name") == model]
    return mine or rows


def _total(samples: Samples, base: str, model: Optional[str]) -> Optional[float]:
    rows = _series(samples, base, model)
    return sum(v for _, v in rows if not math.isnan(v)) if rows else None


@dataclass
class Counters:
    """One reading of an engine's counters. `values` holds totals by our names; `per_pos` is
    accepted tokens per draft position (vLLM) or per-position step counts (SGLang histogram)."""

    engine: str
    values: dict[str, float] = field(default_factory=dict)
    per_pos: list[float] = field(default_factory=list)
    histogram: list[float] = field(default_factory=list)  # SGLang: steps by accepted drafts

    def minus(self, before: "Counters") -> "Counters":
        vals = {k: v - before.values.get(k, 0.0) for k, v in self.values.items()}
        pos = [v - (before.per_pos[i] if i < len(before.per_pos) else 0.0) for i, v in enumerate(self.per_pos)]
        hist = [v - (before.histogram[i] if i < len(before.histogram) else 0.0) for i, v in enumerate(self.histogram)]
        return Counters(self.engine, vals, pos, hist)


def vllm_counters(samples: Samples, model: Optional[str] = None) -> Optional[Counters]:
    """vLLM's spec-decode counters summed over engines; None when the server exports none (no
    speculative config: SpecDecodingProm registers nothing, vllm/v1/spec_decode/metrics.py:211-213)."""
    values = {}
    for key in ("drafts", "draft_tokens", "accepted", "generation_tokens"):
        total = _total(samples, VLLM_NAMES[key], model)
        if total is not None:
            values[key] = total
    if "drafts" not in values:
        return None
    by_pos: dict[int, float] = {}
    for labels, value in _series(samples, VLLM_NAMES["accepted_per_pos"], model):
        try:
            pos = int(labels.get("position", ""))
        except ValueError:
            continue
        by_pos[pos] = by_pos.get(pos, 0.0) + value
    per_pos = [by_pos.get(i, 0.0) for i in range(max(by_pos) + 1)] if by_pos else []
    return Counters("vllm", values, per_pos)


def llamacpp_counters(samples: Samples, model: Optional[str] = None) -> Optional[Counters]:
    """llama-server's spec-decode counters (needs --metrics); None when it exports none."""
    values = {}
    for key in ("drafts", "draft_tokens", "accepted"):
        total = _total(samples, LLAMACPP_NAMES[key], model)
        if total is not None:
            values[key] = total
    if "drafts" not in values:
        return None
    by_pos: dict[int, float] = {}
    for labels, value in _series(samples, LLAMACPP_NAMES["accepted_per_pos"], model):
        try:
            pos = int(labels.get("position", ""))
        except ValueError:
            continue
        if 0 <= pos < 4096:
            by_pos[pos] = by_pos.get(pos, 0.0) + value
    per_pos = [by_pos.get(i, 0.0) for i in range(max(by_pos) + 1)] if by_pos else []
    return Counters("llama.cpp", values, per_pos)


def llamacpp_request_counters(items: Iterable[dict[str, Any]]) -> Optional[Counters]:
    """Sum of per-response timings.draft_n / draft_n_accepted; None when no response carried them
    (llama-server omits both when nothing was drafted)."""
    values = {"draft_tokens": 0.0, "accepted": 0.0}
    seen = False
    for t in items:
        if not isinstance(t, dict) or not isinstance(t.get("draft_n"), (int, float)):
            continue
        seen = True
        values["draft_tokens"] += float(t["draft_n"])
        values["accepted"] += float(t.get("draft_n_accepted") or 0)
    return Counters("llama.cpp-timings", values) if seen else None


def sglang_counters(samples: Samples, model: Optional[str] = None) -> Optional[Counters]:
    """SGLang's server-wide counters (needs `--enable-metrics`); None when the server exports none."""
    verify = _total(samples, SGLANG_NAMES["verify_calls"], model)
    if verify is None:
        return None
    gen = _total(samples, SGLANG_NAMES["generation_tokens"], model)
    return Counters("sglang", {"verify_calls": verify, "generation_tokens": gen or 0.0})


def sglang_request_counters(items: Iterable[tuple[dict[str, Any], int]]) -> Optional[Counters]:
    """Sum of per-request `spec_tokens_details` with each request's completion token count (SGLang's
    exact per-request counts); None when no request carried them."""
    values = {"verify_calls": 0.0, "accepted": 0.0, "generation_tokens": 0.0}
    hist: list[float] = []
    seen = False
    for d, completion_tokens in items:
        if not isinstance(d, dict):
            continue
        seen = True
        values["verify_calls"] += float(d.get("spec_verify_ct") or 0)
        values["accepted"] += float(d.get("spec_num_correct_drafts") or 0)
        values["generation_tokens"] += float(completion_tokens)
        for i, n in enumerate(d.get("spec_correct_drafts_histogram") or []):
            hist += [0.0] * (i + 1 - len(hist))
            hist[i] += float(n)
    return Counters("sglang", values, histogram=hist) if seen else None


def _survival(histogram: list[float]) -> list[float]:
    """Steps by accepted drafts -> P(draft position k accepted) for k = 1 .. len-1."""
    steps = sum(histogram)
    if steps <= 0:
        return []
    return [sum(histogram[k:]) / steps for k in range(1, len(histogram))]


def summarize_acceptance(delta: Optional[Counters]) -> dict[str, Any]:
    """Whether speculation ran during the probe, and its acceptance, from counter differences."""
    if delta is None:
        return {"speculation_active": False, "steps": 0, "mean_acceptance": 0.0, "mean_accepted_drafts": 0.0,
                "per_position_acceptance": [], "convention": "no speculative-decoding counters"}
    v = delta.values
    if delta.engine == "llama.cpp-timings":
        drafted, accepted = v.get("draft_tokens", 0.0), v.get("accepted", 0.0)
        return {"speculation_active": drafted > 0, "steps": 0, "mean_acceptance": 0.0,
                "mean_accepted_drafts": None, "per_position_acceptance": [],
                "acceptance_rate": accepted / drafted if drafted > 0 else 0.0,
                "convention": CONVENTIONS[delta.engine]}
    if delta.engine in ("vllm", "llama.cpp"):
        steps = v.get("drafts", 0.0)
        accepted = v.get("accepted", 0.0)
        tau = 1.0 + accepted / steps if steps > 0 else 0.0
        per_pos = [p / steps for p in delta.per_pos] if steps > 0 else []
    else:
        steps = v.get("verify_calls", 0.0)
        accepted = v.get("accepted")
        tau = v.get("generation_tokens", 0.0) / steps if steps > 0 else 0.0
        per_pos = _survival(delta.histogram)
    return {
        "speculation_active": steps > 0,
        "steps": int(round(steps)),
        "mean_acceptance": tau,
        "mean_accepted_drafts": (accepted / steps) if steps > 0 and accepted is not None else None,
        "per_position_acceptance": per_pos,
        "convention": CONVENTIONS[delta.engine],
    }
