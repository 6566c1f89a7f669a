"""`dflash-check probe` against stand-in vLLM / SGLang servers on 127.0.0.1 (tests/standin_server.py):
tau equals the servers' true counters, speculation off and lossy servers are caught, hung / broken /
refused servers are one-line errors within the timeout."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("prometheus_client")

from click.testing import CliRunner  # noqa: E402

from dflash_compat.cli.app import cli  # noqa: E402
from dflash_compat.liveprobe import reference as rf  # noqa: E402
from dflash_compat.liveprobe.probe import ProbeRequest, probe_exit_code, run_probe  # noqa: E402

from .standin_server import StandIn, refused_url  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET, DRAFT = ROOT / "examples/tiny-qwen3/target", ROOT / "examples/tiny-qwen3/draft"
PROMPTS = [{"prompt": "w1 w2 w3 w4"}, {"prompt_ids": [5, 9, 11]}, {"prompt_ids": [40, 2, 17, 8, 8]}]
MAX_TOKENS = 24
SLOW = 120.0  # a working stand-in's first request warms torch up; a loaded CI machine is slow


@pytest.fixture(scope="module")
def pair():
    """The tiny pair, loaded once; its draft proposes the target's greedy continuation, 20% wrong."""
    torch.set_num_threads(1)
    ref = rf.load_reference(str(TARGET), str(DRAFT))
    return ref, rf.ReplayProposer(ref.draft, error_rate=0.2, seed=1)


@pytest.fixture
def server(pair):
    servers = []

    def start(mode, **kw):
        srv = StandIn(mode, pair[0], pair[1], block_size=8, **kw).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def _probe(url, prompts=PROMPTS, reference=None, timeout=SLOW, engine="auto"):
    return run_probe(ProbeRequest(url=url, model="tiny", prompts=list(prompts), max_tokens=MAX_TOKENS,
                                  timeout=timeout, engine=engine), reference)


def _cli(*args):
    res = CliRunner().invoke(cli, ["probe", *map(str, args)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_vllm_tau_equals_the_servers_true_counters(pair, server):
    srv = server("vllm")
    payload = _probe(srv.url, reference=pair[0])
    s, truth = payload["summary"], srv.truth
    assert payload["server"]["engine"] == "vllm"
    assert payload["server"]["speculative"] == {"num_speculative_tokens": 7}
    assert s["speculation_active"] and s["steps"] == truth["steps"] > 0
    assert s["mean_acceptance"] == pytest.approx(1 + truth["accepted"] / truth["steps"], abs=1e-12)
    assert s["per_position_acceptance"] == pytest.approx([n / truth["steps"] for n in truth["per_pos"]], abs=1e-12)
    assert 1.5 < s["mean_acceptance"] < 8  # the replay draft really accepts
    assert s["lossless"] is True and s["compared_by"] == "token ids"
    assert s["tokens_per_s"] > 0 and probe_exit_code(payload, None) == 0
    assert probe_exit_code(payload, min_acceptance=s["mean_acceptance"] + 0.01) == 1


@pytest.mark.parametrize("details", [True, False], ids=["per-request-details", "metrics-only"])
def test_sglang_tau_in_sglangs_own_counting(pair, server, details):
    srv = server("sglang", sglang_details=details)
    payload = _probe(srv.url)
    s, truth = payload["summary"], srv.truth
    assert payload["server"]["engine"] == "sglang"
    assert payload["server"]["speculative"]["speculative_algorithm"] == "DFLASH"
    # SGLang: completion tokens / verify calls (tokenizer_manager.py:3165-3168)
    assert s["mean_acceptance"] == pytest.approx(truth["tokens"] / truth["verify"], abs=1e-12)
    assert "completion tokens / verify steps" in s["convention"]
    if details:
        steps = sum(truth["histogram"])
        expected = [sum(truth["histogram"][k:]) / steps for k in range(1, 8)]
        assert s["per_position_acceptance"] == pytest.approx(expected, abs=1e-12)
        assert s["counters_source"].startswith("per-request")
    else:
        assert s["counters_source"].startswith("/metrics") and s["per_position_acceptance"] == []


def test_speculation_off_is_reported_and_fails(pair, server):
    srv = server("vllm-nospec")
    payload = _probe(srv.url, reference=pair[0])
    assert payload["summary"]["speculation_active"] is False
    assert payload["summary"]["lossless"] is True  # plain greedy is lossless; it just is not speculative
    assert probe_exit_code(payload, None) == 1


def test_server_without_any_counters_is_not_active(server):
    """An OpenAI-compatible server with no /metrics and no /server_info: no counters, speculation not active."""
    res = _cli(server("plain").url, "--model", "tiny", "--max-tokens", 8, "--timeout", SLOW)
    assert res.exit_code == 1, res.output
    assert "speculation NOT active" in res.output and "exports no speculative-decoding counters" in res.output


def test_lossy_server_fails_through_the_cli(server, tmp_path):
    srv = server("vllm-lossy")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt_ids": [5, 9, 11]}\n"w3 w4 w5"\n')
    profile = tmp_path / "profile.json"
    res = _cli(srv.url, "--model", "tiny", "--prompts", prompts, "--max-tokens", MAX_TOKENS, "--timeout", SLOW,
               "--reference", TARGET, "--draft", DRAFT, "--profile-out", profile, "-f", "json")
    assert res.exit_code == 1, res.output
    payload = json.loads(res.output)
    assert payload["summary"]["lossless"] is False and payload["summary"]["speculation_active"] is True
    assert payload["results"][0]["first_divergence"] == 3  # the stand-in's bug
    assert payload["summary"]["reference_mean_acceptance"] is not None  # our runtime with the real draft
    doc = json.loads(profile.read_text())
    assert doc["source"] == "probe" and doc["engine"] == "vllm" and doc["block_size"] == 8
    assert doc["per_position_acceptance"] == payload["summary"]["per_position_acceptance"]


def test_text_only_server_is_compared_by_retokenised_text(pair, server):
    srv = server("vllm", return_ids=False)
    payload = _probe(srv.url, reference=pair[0])
    assert payload["summary"]["lossless"] is True
    assert payload["summary"]["compared_by"].startswith("re-tokenised text")


def test_text_report(server):
    srv = server("vllm")
    res = _cli(srv.url, "--model", "tiny", "--max-tokens", 8, "--timeout", SLOW)
    assert res.exit_code == 0, res.output
    assert "speculation active" in res.output and "k  1 |" in res.output
    assert "lossless: not checked" in res.output


def test_hung_server_times_out_within_the_timeout(server):
    srv = server("hang")
    start = time.monotonic()
    res = _cli(srv.url, "--model", "tiny", "--timeout", 1)
    assert res.exit_code == 2
    assert "timed out" in res.output and res.output.count("\n") == 1
    assert time.monotonic() - start < 10


def test_non_json_server_is_one_line_error(server):
    res = _cli(server("garbage").url, "--model", "tiny", "--timeout", 5)
    assert res.exit_code == 2 and "not JSON" in res.output and res.output.count("\n") == 1


def test_refused_port_is_one_line_error():
    res = _cli(refused_url(), "--model", "tiny", "--timeout", 5)
    assert res.exit_code == 2 and "connection refused" in res.output and res.output.count("\n") == 1


def test_unknown_model_names_the_served_ones(server):
    res = _cli(server("vllm").url, "--model", "other", "--timeout", SLOW)
    assert res.exit_code == 2 and "serves tiny" in res.output


@pytest.mark.parametrize("content, message", [
    ("{\"prompt\": 3}\n", "expected a string"),
    ("not json\n", "invalid JSON"),
    ("\n\n", "no prompts"),
    ("{\"prompt_ids\": [1, -2]}\n", "expected a string"),
])
def test_bad_prompts_file(tmp_path, content, message):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    res = _cli("http://127.0.0.1:9", "--model", "m", "--prompts", path)
    assert res.exit_code == 2 and message in res.output


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8000", "127.0.0.1:8000", "http://user:pw@127.0.0.1:8000"])
def test_bad_url(url):
    res = _cli(url, "--model", "m")
    assert res.exit_code == 2 and res.output.startswith("dflash-check: error:")


def test_draft_needs_reference():
    res = _cli("http://127.0.0.1:9", "--model", "m", "--draft", DRAFT)
    assert res.exit_code == 2 and "--draft needs --reference" in res.output
