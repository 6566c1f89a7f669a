"""DF450-DF478: lmdeploy's DFlash refusals and user-reported failures, each caught and passed; and the same
configs run through lmdeploy's own validators (dflash_utils.py of the unpacked 0.18.0 wheel, which imports only
`typing`: no GPU, no stubs) with the draft config built as lmdeploy builds it (transformers' AutoConfig)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dflash_compat.deployment.options import CheckOptions
from tests.configs import DELETE, catches, draft, merge, run_rule, target

L = ("lmdeploy",)
WHEEL = Path("/work/wheels/src/lmdeploy-0.18.0/lmdeploy/pytorch/spec_decode/dflash_utils.py")


def good_draft(**changes):
    """The z-lab Qwen3-8B draft with block_size also inside dflash_config (the layout lmdeploy reads)."""
    return merge(draft(**{"dflash_config.block_size": 16}), **changes)


def findings(code, t=None, d=None, **opts):
    return run_rule(code, t if t is not None else target(), d if d is not None else good_draft(),
                    options=CheckOptions(**opts), backends=L)


def lmd_errors(t=None, d=None, **opts):
    """Every lmdeploy error finding of the pair."""
    from dflash_compat.checker import RuleContext, run_rules
    from dflash_compat.rules import ALL_RULES
    from dflash_compat.specs import parse_draft_config, parse_target_config

    ctx = RuleContext(target=parse_target_config(t if t is not None else target(), "t"),
                       draft=parse_draft_config(d if d is not None else good_draft(), "d"), options=CheckOptions(**opts))
    return sorted({f.code for f in run_rules(ctx, [r for r in ALL_RULES if "DF450" <= r.code <= "DF499"], L)
                   if f.severity == "error" and f.backend == "lmdeploy"})


def test_the_good_pair_has_no_lmdeploy_error():
    assert lmd_errors(lmdeploy_backend="pytorch") == []


# -- the must-haves of the issue ------------------------------------------------------------------------------


def test_df453_the_published_z_lab_layout_fails_with_the_fix_named():
    [f] = findings("DF453", d=draft())  # block_size 16 at the top level only, as z-lab publishes it
    assert f.severity == "error" and "KeyError 'block_size'" in f.message
    assert '"dflash_config": {..., "block_size": 16}' in f.fix
    from dflash_compat.rules import RULES_BY_CODE

    assert [s.cite("0.18.0") for s in RULES_BY_CODE["DF453"].sources][0] == \
        "lmdeploy 0.18.0 lmdeploy/pytorch/spec_decode/dflash_utils.py:142"


def test_df478_turbomind_serves_without_dflash():
    [f] = findings("DF478", lmdeploy_backend="turbomind")
    assert "without DFlash" in f.message and f.fix == "Launch with --backend pytorch."
    assert not findings("DF478", lmdeploy_backend="pytorch") and not findings("DF478")
    # a target TurboMind does not take falls back to the PyTorch engine
    assert not findings("DF478", t=target(architectures=["Qwen3_5ForCausalLM"]), lmdeploy_backend="turbomind")


# -- one catch and one pass per rule --------------------------------------------------------------------------

CASES = [
    ("DF450", dict(d=good_draft(architectures=["DFlash2DraftModel"])), {}),
    ("DF451", dict(t=target(architectures=["Qwen3MoeForCausalLM"])), {}),
    ("DF451", dict(t=target(architectures=["FooForCausalLM"])), {}),
    ("DF452", dict(d=good_draft(dflash_config=DELETE)), {}),
    ("DF452", dict(d=good_draft(dflash_config=[1])), {}),
    ("DF454", dict(d=merge(good_draft(**{"dflash_config.mask_token_id": DELETE}), mask_token_id=151669)), {}),
    ("DF455", dict(d=good_draft(num_target_layers=DELETE)), {}),
    ("DF456", dict(d=good_draft(num_target_layers=28)), {}),
    ("DF457", dict(), dict(lmdeploy_num_draft_tokens=16)),
    ("DF457", dict(), dict(lmdeploy_block_size=17)),
    ("DF458", dict(), dict(lmdeploy_block_size=1)),
    ("DF459", dict(d=good_draft(**{"dflash_config.target_layer_ids": [1, "9"]})), {}),
    ("DF459", dict(d=good_draft(**{"dflash_config.target_layer_ids": []})), {}),
    ("DF460", dict(d=good_draft(**{"dflash_config.target_layer_ids": [9, 1, 17, 25, 33]})), {}),
    ("DF460", dict(d=good_draft(**{"dflash_config.target_layer_ids": [1, 1, 17, 25, 33]})), {}),
    ("DF461", dict(d=good_draft(**{"dflash_config.target_layer_ids": [1, 9, 17, 25, 36]})), {}),
    ("DF462", dict(t=target(num_hidden_layers=3), d=good_draft(num_target_layers=3,
                                                              **{"dflash_config.target_layer_ids": DELETE})), {}),
    ("DF463", dict(d=good_draft(target_layer_ids=[2, 10, 18, 26, 34],
                                **{"dflash_config.target_layer_ids": DELETE})), {}),
    ("DF464", dict(d=good_draft(layer_types=["full_attention"])), {}),
    ("DF464", dict(d=good_draft(layer_types=["full_attention"] * 4 + ["chunked_attention"])), {}),
    ("DF465", dict(d=good_draft(layer_types=["sliding_attention"] + ["full_attention"] * 4, sliding_window=2048)),
     {}),
    ("DF466", dict(d=good_draft(use_sliding_window=True, sliding_window=2048,
                                layer_types=["sliding_attention"] + ["full_attention"] * 4,
                                **{"dflash_config.swa_window_size": 1024})), {}),
    ("DF467", dict(d=good_draft(**{"dflash_config.use_swa": True})), {}),
    ("DF468", dict(d=good_draft(**{"dflash_config.causal": False}, use_sliding_window=True, sliding_window=2048,
                                layer_types=["sliding_attention"] + ["full_attention"] * 4)), {}),
    ("DF468", dict(d=good_draft(use_sliding_window=True, sliding_window=2048,
                                layer_types=["sliding_attention"] + ["full_attention"] * 4,
                                **{"dflash_config.causal": True})), {}),
    ("DF469", dict(d=good_draft(**{"dflash_config.attention_sink_bias": True})), {}),
    ("DF470", dict(), dict(lmdeploy_dp=2)),
    ("DF471", dict(), dict(lmdeploy_ep=4)),
    ("DF472", dict(), dict(lmdeploy_prefix_caching=True)),
    ("DF473", dict(), dict(lmdeploy_quant_policy=8)),
    ("DF474", dict(), dict(lmdeploy_device="ascend")),
    ("DF475", dict(), dict(tp=3)),
    ("DF475", dict(t=target(num_key_value_heads=3)), dict(tp=2)),
    ("DF476", dict(t=target(torch_dtype="float16")), {}),
    ("DF477", dict(), dict(lmdeploy_dtype="float16")),
]


@pytest.mark.parametrize("code,pair,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_rule_catches_its_case_and_passes_the_good_pair(code, pair, opts):
    found = findings(code, **pair, **opts)
    assert found and all(f.backend == "lmdeploy" for f in found), code
    assert all("lmdeploy" in f.message or "PR #4991" in f.message for f in found)
    assert not catches(code, target(), good_draft(), backends=L), code


def test_passes_that_must_stay_passes():
    assert not findings("DF457", lmdeploy_num_draft_tokens=15) and not findings("DF457", lmdeploy_block_size=16)
    assert not findings("DF475", tp=8)  # 32 heads, 8 kv heads
    assert not findings("DF475", t=target(num_key_value_heads=2), tp=2)
    assert not findings("DF476", t=target(torch_dtype="float16"), lmdeploy_dtype="bfloat16")
    assert not findings("DF477", t=target(torch_dtype="float16"), lmdeploy_dtype="bfloat16")
    assert findings("DF477", t=target(torch_dtype="float16"), d=good_draft(torch_dtype="float16"))
    assert not findings("DF463", d=good_draft(target_layer_ids=[1, 9, 17, 25, 33]))  # the nested ids win
    # sliding layers with use_sliding_window and a window: accepted
    assert not findings("DF465", d=good_draft(use_sliding_window=True, sliding_window=2048,
                                               layer_types=["sliding_attention"] + ["full_attention"] * 4))


def test_a_config_check_reports_lmdeploy_in_every_output_format(tmp_path):
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    t, d = tmp_path / "t", tmp_path / "d"
    for folder, cfg in ((t, target()), (d, draft())):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
    for fmt in ("text", "json", "sarif", "junit", "github", "markdown"):
        res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--backend", "lmdeploy", "--no-deep",
                                        "--format", fmt])
        assert res.exit_code == 1, (fmt, res.output[-2000:])
        assert "DF453" in res.output, fmt
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--backend", "lmdeploy", "--no-deep",
                                    "--format", "sarif"])
    assert "lmdeploy 0.18.0 lmdeploy/pytorch/spec_decode/dflash_utils.py:142" in res.output  # the release judged


# -- lmdeploy's own validators on the same configs -----------------------------------------------------------


def _their_utils():
    if not WHEEL.is_file():
        pytest.skip(f"{WHEEL} is not unpacked (pip download --no-deps lmdeploy==0.18.0 -d /work/wheels; unzip under "
                    "/work/wheels/src/lmdeploy-0.18.0)")
    spec = importlib.util.spec_from_file_location("lmdeploy_dflash_utils_0_18_0", WHEEL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # the module imports only `typing`: it runs here as it runs in lmdeploy
    return mod


def _lmdeploy_refuses(utils, t_cfg, d_cfg, opts) -> str:
    """What lmdeploy 0.18.0 says at start-up: '' when it accepts. The draft config is built as lmdeploy builds it
    (lmdeploy/hf_configs config_from_pretrained -> transformers AutoConfig; a model_type qwen3 draft becomes a
    Qwen3Config). The number of draft tokens follows messages.py:878-886 (block size B means B - 1), transcribed."""
    from transformers import AutoConfig

    try:  # transformers refusing the config stops lmdeploy as surely (before its own checks)
        cfg = AutoConfig.for_model(d_cfg.get("model_type", "qwen3"), **{k: v for k, v in d_cfg.items()
                                                                            if k != "model_type"})
    except Exception as e:  # noqa: BLE001 - any refusal of transformers' config class
        return f"transformers: {type(e).__name__}: {e}"
    try:
        k = opts.get("lmdeploy_block_size", 0) - 1 if "lmdeploy_block_size" in opts else \
            opts.get("lmdeploy_num_draft_tokens", 1)
        utils.validate_dflash_cache_config(SimpleNamespace(enable_prefix_caching=opts.get("lmdeploy_prefix_caching",
                                                                                          False),
                                                           quant_policy=opts.get("lmdeploy_quant_policy", 0)))
        utils.validate_dflash_runtime_config(cache_config=SimpleNamespace(device_type=opts.get("lmdeploy_device",
                                                                                               "cuda")))
        utils.validate_dflash_dist_config(SimpleNamespace(dp=opts.get("lmdeploy_dp", 1), ep=opts.get("lmdeploy_ep", 1)))
        utils.parse_dflash_config(cfg, k, target_num_layers=t_cfg["num_hidden_layers"])
    except (ValueError, KeyError, AttributeError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return ""


# the codes whose refusal lmdeploy's dflash_utils.py makes (the others: model classes, TP asserts, dtypes, backend)
VALIDATED = {f"DF{n}" for n in (452, 453, 454, 455, 456, 457, 459, 460, 461, 462, 464, 465, 466, 467, 468, 469,
                                470, 471, 472, 473, 474)}


@pytest.mark.parametrize("code,pair,opts", [c for c in CASES if c[0] in VALIDATED] +
                         [("", {}, {}), ("", dict(d=good_draft(use_sliding_window=True, sliding_window=2048,
                                                               layer_types=["sliding_attention"] +
                                                               ["full_attention"] * 4)), {}),
                          ("", {}, dict(lmdeploy_num_draft_tokens=15)), ("", {}, dict(lmdeploy_block_size=16)),
                          ("DF453", dict(d=draft()), {})],
                         ids=lambda x: x if isinstance(x, str) else None)
def test_lmdeploy_own_validators_agree(code, pair, opts):
    utils = _their_utils()
    t_cfg, d_cfg = pair.get("t", target()), pair.get("d", good_draft())
    theirs = _lmdeploy_refuses(utils, t_cfg, d_cfg, opts)
    ours = [c for c in lmd_errors(t_cfg, d_cfg, **opts) if c in VALIDATED]
    assert bool(theirs) == bool(ours), (code, theirs, ours)
    if code:
        assert code in ours, (code, theirs, ours)
