"""`dflash-check recommend` and the acceptance profile: the modelled optimum on synthetic profiles, the
cost fit, smoke's --profile-out, bad profiles, the optional plot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.liveprobe import profile as pf

ROOT = Path(__file__).resolve().parent.parent


def _profile(tmp_path, per, cost=None, name="p.json"):
    doc = pf.make_profile(source="smoke", engine="torch", block_size=len(per) + 1, per_position=per, steps=100,
                          mean_acceptance=pf.expected_tokens(per, len(per)), convention="test", cost=cost)
    path = tmp_path / name
    pf.write_profile(str(path), doc)
    return path


def _recommend(*args):
    res = CliRunner().invoke(cli, ["recommend", *map(str, args)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_known_optimum(tmp_path):
    # E(K) = 1 + 0.95 + 0.9 + 0.85 + ...; a cliff after position 3. With draft 0.1 and 0.1 per verified
    # token: S(2) = 2.85/1.3 = 2.19, S(3) = 3.7/1.4 = 2.64, S(4) = 3.8/1.5 = 2.53: K = 3.
    path = _profile(tmp_path, [0.95, 0.9, 0.85, 0.1, 0.05, 0.0, 0.0])
    res = _recommend("--profile", path, "--draft-cost", 0.1, "--verify-cost-per-token", 0.1, "--draft", "org/d", "-f", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["recommended_k"] == 3 and doc["modelled_speedup"] == pytest.approx(3.7 / 1.4)
    assert doc["cost"] == {"draft": 0.1, "verify_per_token": 0.1, "assumed": False, "origin": "given"}
    assert doc["flags"]["vllm"] == ("--speculative-config.method dflash --speculative-config.model org/d "
                                    "--speculative-config.num_speculative_tokens 3")
    assert doc["flags"]["sglang"] == "--speculative-num-draft-tokens 4"


@pytest.mark.parametrize("per, cost, k", [
    ([1.0] * 15, {"draft": 0.0, "verify_per_token": 0.0}, 15),  # free verify, perfect draft: the whole block
    ([0.2] * 7, {"draft": 0.5, "verify_per_token": 0.2}, 0),  # never pays: S(7) = 2.4 / 2.9 < 1
    # geometric acceptance 0.9^k, draft 0.1, verify +0.2 per token: S(6) = 2.268, S(7) = 2.278, S(8) = 2.269
    ([0.9 ** k for k in range(1, 16)], {"draft": 0.1, "verify_per_token": 0.2}, 7),
])
def test_optimum_matches_a_brute_force_search(per, cost, k):
    def speed(K):  # written out independently of the module: tokens per step over cost per step
        return (1 + sum(per[:K])) / (1 if K == 0 else 1 + cost["draft"] + cost["verify_per_token"] * K)

    assert max(range(len(per) + 1), key=speed) == k
    assert pf.recommend_k(per, cost) == k


def test_measured_cost_from_the_profile_and_assumed_default(tmp_path):
    measured = _profile(tmp_path, [0.8, 0.6, 0.4], cost={"draft": 0.3, "verify_per_token": 0.05, "plain_step_s": 0.01})
    doc = json.loads(_recommend("--profile", measured, "-f", "json").output)
    assert doc["cost"]["origin"] == "measured by smoke" and doc["cost"]["draft"] == 0.3
    bare = _profile(tmp_path, [0.8, 0.6, 0.4], name="bare.json")
    text = _recommend("--profile", bare).output
    assert "ASSUMED" in text and "k  1 |################################" in text and "recommended K = 3" in text


def test_cost_fit_reproduces_the_measured_steps():
    cost = pf.fit_cost(plain_step_s=0.010, long_step_s=0.020, long_block=8, short_step_s=0.0135, short_block=2)
    # c(K) = draft + 1 + v1*K must give back both measured speculative steps (relative to a plain step)
    assert pf.step_cost(cost, 7) == pytest.approx(2.0) and pf.step_cost(cost, 1) == pytest.approx(1.35)
    one_point = pf.fit_cost(0.010, 0.020, 8, None, None)
    assert one_point["verify_per_token"] == 0 and pf.step_cost(one_point, 7) == pytest.approx(2.0)


_FULL = ('{"kind": "dflash-acceptance-profile", "source": "smoke", "engine": "torch", "block_size": 2, "steps": 3, '
         '"per_position_acceptance": [0.5], "mean_acceptance": 1.5, "cost": null}')


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"),
    ('{"kind": "other"}', "not an acceptance profile"),
    ('{"kind": "dflash-acceptance-profile", "per_position_acceptance": [0.5, 1.5]}', "`source` is required"),
    (_FULL.replace('"per_position_acceptance": [0.5]', '"per_position_acceptance": [0.5, 1.5]'),
     "`per_position_acceptance.1` should be less than or equal to 1 (got 1.5)"),
    (_FULL.replace('"cost": null', '"cost": {"draft": -1, "verify_per_token": 0}'),
     "`cost.draft` should be greater than or equal to 0"),
])
def test_bad_profile_is_one_line_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    res = _recommend("--profile", path)
    assert res.exit_code == 2 and message in res.output and res.output.count("\n") == 1


def test_plot_without_matplotlib_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    res = _recommend("--profile", _profile(tmp_path, [0.9, 0.5]), "--plot", tmp_path / "p.png")
    assert res.exit_code == 2 and "--plot needs matplotlib" in res.output
    assert not (tmp_path / "p.png").exists()


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    res = _recommend("--profile", _profile(tmp_path, [0.9, 0.5]), "--plot", tmp_path / "p.png")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_smoke_writes_a_profile_recommend_reads(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    torch.set_num_threads(1)
    path = tmp_path / "smoke-profile.json"
    res = CliRunner().invoke(cli, ["smoke", str(ROOT / "examples/tiny-qwen3/target"), "--draft",
                                   str(ROOT / "examples/tiny-qwen3/draft"), "--prompt-ids", "1,2,3", "--prompt-ids", "7,8",
                                   "--max-new-tokens", "24", "--profile-out", str(path), "-f", "json"])
    assert res.exit_code == 0, res.output
    smoke, doc = json.loads(res.output), json.loads(path.read_text())
    assert doc["source"] == "smoke" and doc["engine"] == "torch" and doc["block_size"] == 8
    assert len(doc["per_position_acceptance"]) == 7
    assert doc["mean_acceptance"] == pytest.approx(smoke["summary"]["mean_acceptance"])
    assert doc["measured"] == {"block_size": 8, "speedup": pytest.approx(smoke["summary"]["speedup"])}
    assert doc["cost"]["draft"] >= 0 and doc["cost"]["verify_per_token"] >= 0 and doc["cost"]["plain_step_s"] > 0
    assert _recommend("--profile", path).exit_code == 0
