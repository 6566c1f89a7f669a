"""DF010 model-size-implausible, and the deep check that refuses to build such a model (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.modelfacts import Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import parse_target_config
from dflash_compat.specs.sizes import oversized
from tests.configs import catches, draft, run_rule, target
from tests.deep_helpers import fixture

PAIRS = Path(__file__).resolve().parent / "fixtures" / "pairs"


@pytest.mark.parametrize("change", [{"num_hidden_layers": 10**7}, {"hidden_size": 1_000_000},
                                    {"vocab_size": 9_000_000}, {"num_attention_heads": 5000},
                                    {"num_experts": 100_000}, {"num_hidden_layers": 1000, "num_experts": 1000}])
def test_catches_absurd_target_sizes(change):
    assert catches("DF010", target(**change), draft())


def test_catches_a_vision_tower_depth_and_a_draft_size():
    vlm = json.loads((PAIRS / "qwen3-vl-8b" / "target" / "config.json").read_text())
    vlm["vision_config"]["depth"] = 10**6
    [f] = run_rule("DF010", vlm, draft())
    assert "vision_config.depth = 1000000 (at most 1024)" in f.message
    assert f.locations[0].key == "vision_config.depth"
    assert catches("DF010", target(), draft(num_hidden_layers=5000))


@pytest.mark.parametrize("name", ["qwen3-8b", "llama-3.1-70b", "deepseek-v3", "qwen3.5-35b-a3b"])
def test_passes_real_models(name):
    assert oversized(fixture(name)) == []
    assert not catches("DF010", target(), draft())


def test_passes_every_fixture_pair():
    configs = sorted(PAIRS.glob("*/*/config.json"))
    assert len(configs) >= 10
    assert [p for p in configs if oversized(json.loads(p.read_text()))] == []


def test_the_deep_check_does_not_build_an_oversized_target(tmp_path, monkeypatch):
    import dflash_compat.inspection.torch_meta as torch_meta
    from dflash_compat.inspection import inspect_target

    monkeypatch.setattr(torch_meta, "inspect_torch_target", lambda *a: pytest.fail("built the model"))
    raw = target(num_hidden_layers=10**6)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    facts = inspect_target(Resolved(ref="t", folder=tmp_path), parse_target_config(raw, "t"), CheckOptions(),
                           framework="torch")
    assert isinstance(facts, Skipped) and facts.reason == "oversized-config"
    assert "num_hidden_layers = 1000000" in facts.detail
