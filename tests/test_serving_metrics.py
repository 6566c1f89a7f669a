"""The Prometheus parser and the counter readers: agreement with prometheus_client's own parser on the
exposition vLLM's counters produce, edge cases of the text format, each engine's tau convention."""

from __future__ import annotations

import pytest

from dflash_compat.liveprobe import metrics as m
from dflash_compat.liveprobe.http import ServerError, parse_url


def _vllm_text(drafts=10, accepted=23, per_pos=(9, 7, 4, 2, 1), model="m", engines=("0",)) -> str:
    """The exposition of vLLM's spec-decode counters, made by prometheus_client as vLLM makes them."""
    prom = pytest.importorskip("prometheus_client")
    reg = prom.CollectorRegistry()
    labels = ["model_name", "engine"]
    c = {name: prom.Counter(name, "doc", labels, registry=reg) for name in (
        "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens")}
    pos = prom.Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "doc", labels + ["position"], registry=reg)
    for engine in engines:
        c["vllm:spec_decode_num_drafts"].labels(model, engine).inc(drafts)
        c["vllm:spec_decode_num_draft_tokens"].labels(model, engine).inc(drafts * len(per_pos))
        c["vllm:spec_decode_num_accepted_tokens"].labels(model, engine).inc(accepted)
        for i, n in enumerate(per_pos):
            pos.labels(model, engine, str(i)).inc(n)
    return prom.generate_latest(reg).decode()


def test_parser_agrees_with_prometheus_client():
    parser = pytest.importorskip("prometheus_client.parser")
    text = _vllm_text(engines=("0", "1"))
    ours = m.parse_prometheus(text)
    theirs: dict = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            theirs.setdefault(s.name, []).append((dict(s.labels), s.value))
    assert {k: sorted(v, key=str) for k, v in ours.items()} == {k: sorted(v, key=str) for k, v in theirs.items()}


def test_vllm_counters_sum_engines_and_give_vllms_tau():
    counters = m.vllm_counters(m.parse_prometheus(_vllm_text(engines=("0", "1"))), "m")
    assert counters.values["drafts"] == 20 and counters.values["accepted"] == 46
    assert counters.per_pos == [18, 14, 8, 4, 2]
    summary = m.summarize_acceptance(counters.minus(m.Counters("vllm")))
    assert summary["mean_acceptance"] == pytest.approx(1 + 46 / 20)
    assert summary["per_position_acceptance"] == pytest.approx([0.9, 0.7, 0.4, 0.2, 0.1])


def test_counter_difference_ignores_earlier_traffic():
    before = m.vllm_counters(m.parse_prometheus(_vllm_text(drafts=10, accepted=20, per_pos=(8, 6, 4, 2, 0))))
    after = m.vllm_counters(m.parse_prometheus(_vllm_text(drafts=14, accepted=30, per_pos=(12, 9, 6, 2, 1))))
    s = m.summarize_acceptance(after.minus(before))
    assert s["steps"] == 4 and s["mean_acceptance"] == pytest.approx(1 + 10 / 4)
    assert s["per_position_acceptance"] == pytest.approx([1.0, 0.75, 0.5, 0.0, 0.25])


def test_text_format_edge_cases():
    text = "\n".join([
        "# HELP x doc with \"quotes\"", "# TYPE x counter",
        'x_total{a="with \\"quote\\" and \\\\ and, comma",b="2"} 3.0 1700000000000',
        "y_total 4e2", "z_total NaN", "broken line here", 'w{bad} 1',
        'vllm:spec_decode_num_drafts_total{model_name="other",engine="0"} 7',
        'vllm:spec_decode_num_drafts_total{model_name="mine",engine="0"} 5',
    ])
    got = m.parse_prometheus(text)
    assert got["x_total"] == [({"a": 'with "quote" and \\ and, comma', "b": "2"}, 3.0)]
    assert got["y_total"] == [({}, 400.0)]
    assert "broken" not in got
    # one server, two models: only the asked-for model's samples count
    assert m.vllm_counters(got, "mine").values["drafts"] == 5
    assert m.vllm_counters(got, "absent").values["drafts"] == 12


def test_no_spec_counters_means_not_active():
    assert m.vllm_counters(m.parse_prometheus("vllm:generation_tokens_total 5\n")) is None
    s = m.summarize_acceptance(None)
    assert s["speculation_active"] is False and s["per_position_acceptance"] == []


def test_sglang_request_details_use_sglangs_convention():
    details = [({"spec_verify_ct": 4, "spec_num_correct_drafts": 6, "spec_correct_drafts_histogram": [1, 1, 2]}, 11),
               ({"spec_verify_ct": 2, "spec_num_correct_drafts": 4, "spec_correct_drafts_histogram": [0, 0, 1, 0, 1]}, 7)]
    s = m.summarize_acceptance(m.sglang_request_counters(details))
    assert s["mean_acceptance"] == pytest.approx(18 / 6)  # completion tokens / verify calls
    assert s["mean_accepted_drafts"] == pytest.approx(10 / 6)
    assert s["per_position_acceptance"] == pytest.approx([5 / 6, 4 / 6, 1 / 6, 1 / 6])


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000"),
    ("https://host.example/prefix/", "https://host.example:443/prefix"),
    ("http://[::1]:30000", "http://[::1]:30000"),
])
def test_parse_url(url, expected):
    assert parse_url(url).url() == expected


@pytest.mark.parametrize("url", ["ftp://h:1", "localhost:8000", "http://h:1/?q=1", "http://u:p@h:1", "http://h:99999"])
def test_parse_url_rejects(url):
    with pytest.raises(ServerError):
        parse_url(url)
