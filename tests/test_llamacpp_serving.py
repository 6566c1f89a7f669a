"""llama.cpp serving: the `serve --engine llama.cpp` lines (conversion + llama-server), never a removed
flag; llama-server's /metrics text and per-response timings parsed; `probe` against a stand-in
llama-server (tests/standin_server.py) equals its true counters."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.engines.store import release
from dflash_compat.liveprobe import metrics as m
from dflash_compat.serve.plan import LaunchRequest, build_plan, options_from_argv
from tests.gguf_models import draft_gguf, target_gguf

ROOT = Path(__file__).resolve().parent.parent
DEMO_T, DEMO_D = ROOT / "examples/demo/target", ROOT / "examples/demo/draft"

# What llama-server b11434 prints at /metrics with --metrics after speculating (server-task.cpp:1565-1623)
METRICS = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 120
# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 605
# HELP llamacpp:spec_decode_num_accepted_tokens_total Speculative: Total draft tokens accepted by the target model
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total 412
# HELP llamacpp:spec_decode_num_drafts_total Speculative: Total speculative decoding verification steps
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 90
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 87
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 75
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 65
"""


def test_llamacpp_metrics_parse_into_acceptance():
    c = m.llamacpp_counters(m.parse_prometheus(METRICS))
    assert c.values == {"drafts": 90, "draft_tokens": 605, "accepted": 412} and c.per_pos == [87, 75, 65]
    s = m.summarize_acceptance(c.minus(m.Counters("llama.cpp")))
    assert s["steps"] == 90 and abs(s["mean_acceptance"] - (1 + 412 / 90)) < 1e-9
    assert [round(p, 3) for p in s["per_position_acceptance"]] == [round(87 / 90, 3), round(75 / 90, 3),
                                                                   round(65 / 90, 3)]


def test_llamacpp_metrics_without_speculation_and_timings_fallback():
    assert m.llamacpp_counters(m.parse_prometheus("llamacpp:prompt_tokens_total 3\n")) is None
    c = m.llamacpp_request_counters([{"draft_n": 14, "draft_n_accepted": 7}, {"predicted_n": 3}, "x"])
    s = m.summarize_acceptance(c)
    assert s["speculation_active"] and s["acceptance_rate"] == 0.5
    assert m.llamacpp_request_counters([{"predicted_n": 3}]) is None


# serve ----------------------------------------------------------------------------------------------

def _removed_flags_absent(argv):
    removed = set(release("llama.cpp")["removed_flags"])
    assert removed and not removed & set(argv)


def test_serve_gguf_pair_prints_llama_server_with_the_block_draft_length(tmp_path):
    t, d = target_gguf(tmp_path / "t.gguf"), draft_gguf(tmp_path / "d.gguf")
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "-e", "llama.cpp", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["argv"] == ["llama-server", "-m", str(t), "-md", str(d), "--spec-type", "draft-dflash",
                           "--spec-draft-n-max", "7", "--metrics"] and doc["prepare"] == []
    _removed_flags_absent(doc["argv"])
    assert options_from_argv("llama.cpp", doc["argv"]) == {"llamacpp_draft_n_max": 7}


def test_serve_checkpoint_pair_prints_the_conversion_first():
    res = CliRunner().invoke(cli, ["serve", str(DEMO_T), "--draft", str(DEMO_D), "-e", "llama.cpp", "--no-deep"])
    assert res.exit_code == 0, res.output
    script = res.output
    conv_t = script.index("convert_hf_to_gguf.py")
    assert "--target-model-dir" in script and conv_t < script.index("llama-server")
    lines = [ln for ln in script.replace("\\\n", " ").splitlines() if not ln.startswith("#")]
    draft_conv = shlex.split(lines[1])
    assert draft_conv[:3] == ["python", "convert_hf_to_gguf.py", str(DEMO_D)]
    assert draft_conv[draft_conv.index("--target-model-dir") + 1] == str(DEMO_T)
    _removed_flags_absent(shlex.split(lines[-1]))


def test_serve_hub_refs_download_before_converting():
    plan = build_plan(LaunchRequest(engine="llama.cpp", target="Qwen/Qwen3-8B", draft="z-lab/Qwen3-8B-DFlash-b16"),
                      {"block_size": 16})
    assert plan.prepare[0] == ["hf", "download", "Qwen/Qwen3-8B", "--local-dir", "Qwen3-8B"]
    assert plan.argv[plan.argv.index("--spec-draft-n-max") + 1] == "15"


def test_serve_takes_the_draft_length_from_a_profile(tmp_path):
    from dflash_compat.liveprobe.profile import recommend_k

    per = [0.9, 0.8, 0.5, 0.2, 0.05, 0.01, 0.0]
    profile = {"per_position_acceptance": per, "cost": {"draft": 0.3, "verify_per_token": 0.05}}
    plan = build_plan(LaunchRequest(engine="llama.cpp", target="t.gguf", draft="d.gguf", profile=profile),
                      {"block_size": 8})
    k = recommend_k(per, profile["cost"])
    assert 0 < k < 7 and plan.argv[plan.argv.index("--spec-draft-n-max") + 1] == str(k)


def test_serve_flags_too_long_a_draft_and_refuses_other_engines_options(tmp_path):
    t, d = target_gguf(tmp_path / "t.gguf"), draft_gguf(tmp_path / "d.gguf")
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "-e", "llama.cpp", "--spec-draft-n-max", "12"])
    assert res.exit_code == 0 and "DF815" in res.output and "drafts 7 tokens" in res.output
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(d), "-e", "llama.cpp", "--tp", "2"])
    assert res.exit_code == 2 and "not an option of `serve --engine llama.cpp`" in res.output


def test_serve_refuses_a_pair_llama_cpp_cannot_run(tmp_path):
    t = target_gguf(tmp_path / "vl.gguf", arch="qwen3vl")
    res = CliRunner().invoke(cli, ["serve", str(t), "--draft", str(draft_gguf(tmp_path / "d.gguf")), "-e",
                                   "llama.cpp"])
    assert res.exit_code == 1 and "DF801" in res.output
    assert all(line.startswith("#") for line in res.output.splitlines()), "no command for a pair that aborts"


# probe against a stand-in llama-server ---------------------------------------------------------------

@pytest.fixture(scope="module")
def pair():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dflash_compat.liveprobe import reference as rf

    torch.set_num_threads(1)
    ref = rf.load_reference(str(ROOT / "examples/tiny-qwen3/target"), str(ROOT / "examples/tiny-qwen3/draft"))
    return ref, rf.ReplayProposer(ref.draft, error_rate=0.2, seed=1)


@pytest.mark.parametrize("mode", ["llamacpp", "llamacpp-nometrics"])
def test_probe_reads_llama_server_counters_and_timings(pair, mode):
    from dflash_compat.liveprobe.probe import ProbeRequest, run_probe
    from tests.standin_server import StandIn

    srv = StandIn(mode, pair[0], pair[1], block_size=8).start()
    try:
        prompts = [{"prompt_ids": [5, 9, 11]}, {"prompt_ids": [40, 2, 17, 8, 8]}]
        doc = run_probe(ProbeRequest(url=srv.url, model="tiny", prompts=prompts, max_tokens=24, timeout=120.0))
    finally:
        srv.stop()
    s, t = doc["summary"], srv.truth
    assert doc["server"]["engine"] == "llama.cpp" and s["speculation_active"]
    assert all(r["token_ids"] and len(r["token_ids"]) == 24 for r in doc["results"])
    if mode == "llamacpp":
        assert s["steps"] == t["steps"] and abs(s["mean_acceptance"] - (1 + t["accepted"] / t["steps"])) < 1e-9
        assert "/metrics" in s["counters_source"]
    else:
        assert abs(s["acceptance_rate"] - t["accepted"] / t["drafted"]) < 1e-9
        assert "timings.draft_n" in s["counters_source"]
