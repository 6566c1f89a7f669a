"""`dflash-check probe` on a stand-in lmdeploy server (tests/standin_server.py, 127.0.0.1): tau from lmdeploy's
own spec-decode counters equals the server's truth; a TurboMind server (no counters) says so in one line."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("prometheus_client")

from dflash_compat.liveprobe.probe import probe_exit_code  # noqa: E402
from tests.test_probe_cli import SLOW, _cli, _probe, pair, server  # noqa: E402,F401 (fixtures)


def test_lmdeploy_tau_equals_the_servers_true_counters(pair, server):  # noqa: F811
    srv = server("lmdeploy")
    payload = _probe(srv.url, reference=pair[0])
    s, truth = payload["summary"], srv.truth
    assert payload["server"]["engine"] == "lmdeploy"
    assert payload["server"]["speculative"] == {"num_speculative_tokens": 7}
    assert s["speculation_active"] and s["steps"] == truth["steps"] > 0
    assert s["mean_acceptance"] == pytest.approx(1 + truth["accepted"] / truth["steps"], abs=1e-12)
    assert s["per_position_acceptance"] == pytest.approx([n / truth["steps"] for n in truth["per_pos"]], abs=1e-12)
    assert "metrics/loggers.py:83-84" in s["convention"] and s["lossless"] is True
    assert probe_exit_code(payload, None) == 0


def test_a_turbomind_server_says_in_one_line_that_it_runs_no_draft(server):  # noqa: F811
    res = _cli(server("lmdeploy-turbomind").url, "--model", "tiny", "--max-tokens", 8, "--timeout", SLOW)
    assert res.exit_code == 1, res.output
    assert "speculation NOT active" in res.output
    assert "no lmdeploy:spec_decode_* counters: launched without --backend pytorch" in " ".join(res.output.split())
