"""One validation for check and smoke: smoke runs the checker's config rules first and refuses what the
check calls an error (and DF205, the runtime's own limits) with the same finding, one line each, exit 2,
before any weight is loaded; odd configs and option values never reach a model load or a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

PAIR = Path(__file__).resolve().parent.parent / "examples" / "tiny-qwen3"


def _pair(tmp_path: Path, draft: dict | None = None, target: dict | None = None) -> Path:
    """A copy of the tiny pair with config.json keys replaced (a value of None removes the key)."""
    root = tmp_path / "pair"
    shutil.copytree(PAIR, root)
    for who, patch in (("draft", draft), ("target", target)):
        path = root / who / "config.json"
        cfg = json.loads(path.read_text())
        for key, value in (patch or {}).items():
            node, *rest = key.split(".")
            if rest:
                cfg[node][rest[0]] = value
            elif value is None:
                cfg.pop(key, None)
            else:
                cfg[key] = value
        path.write_text(json.dumps(cfg))
    return root


@pytest.fixture()
def no_load(monkeypatch):
    """Fail the test if a runtime starts loading models (the refusal must come before)."""
    import dflash_compat.cli.commands.smoke as smoke

    def loading(*_args, **_kwargs):
        raise AssertionError("a model load started")

    monkeypatch.setattr(smoke, "_run_backend", loading)


def _smoke(root: Path, *args: str, target: str = "target", backend: str = "torch"):
    res = CliRunner().invoke(cli, ["smoke", str(root / target), "--draft", str(root / "draft"), "--prompt-ids",
                                   "1,2,3", "--max-new-tokens", "4", "--backend", backend, *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def _check(root: Path, backend: str = "dflash", target: str = "target"):
    res = CliRunner().invoke(cli, [str(root / target), "--draft", str(root / "draft"), "--no-deep", "--backend",
                                   backend, "-f", "json"])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def _findings(res) -> list[dict]:
    return json.loads(res.stdout)["findings"]


def _one_line(res) -> str:
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("dflash-check: error: "), repr(res.stderr)
    assert "Traceback" not in res.output
    return res.stderr


# --- the table of issue 12: check and smoke give the same verdict ---------------------------------------


@pytest.mark.parametrize("backend", ["torch", "mlx"])
def test_block_size_one_is_an_error_for_both(tmp_path, no_load, backend):
    root = _pair(tmp_path, draft={"dflash_config.block_size": 1})
    engine = {"torch": "dflash", "mlx": "mlx"}[backend]
    [finding] = [f for f in _findings(_check(root, engine)) if f["severity"] == "error"]
    line = _one_line(_smoke(root, backend=backend))
    assert finding["code"] == "DF115" and f"DF115 block-size-invalid: {finding['message']}" in line


def test_dynamic_rope_is_reported_by_check_and_refused_by_smoke(tmp_path, no_load):
    rope = {"rope_type": "dynamic", "factor": 2.0}
    root = _pair(tmp_path, draft={"rope_scaling": rope}, target={"rope_scaling": rope})
    check = _check(root)
    assert check.exit_code == 0  # no engine fails on it: the finding is about smoke's runtime
    [finding] = [f for f in _findings(check) if f["code"] == "DF205"]
    assert finding["severity"] == "warning" and "dflash-check smoke" in finding["message"]
    line = _one_line(_smoke(root))
    assert f"DF205 runtime-draft-rope-unsupported: {finding['message']}" in line


def test_partial_rotary_factor_passes_check_and_smoke_runs_it(tmp_path):
    root = _pair(tmp_path, draft={"partial_rotary_factor": 0.5})
    check = _check(root)
    assert check.exit_code == 0 and not [f for f in _findings(check) if f["severity"] == "error"]
    assert "DF127" in {f["code"] for f in _findings(check)}  # where the engines differ: a warning
    res = _smoke(root, "-f", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"]["lossless"] is True


def test_a_draft_passed_as_target_is_named_as_such(tmp_path, no_load):
    root = _pair(tmp_path)
    for res in (_smoke(root, target="draft"), _check(root, target="draft")):
        line = _one_line(res)
        assert "is a DFlash draft config, not a target" in line and "lm_head" not in line


def test_several_errors_are_one_line_naming_every_code(tmp_path, no_load):
    root = _pair(tmp_path, draft={"dflash_config.block_size": 1, "hidden_act": "gelu"})
    line = _one_line(_smoke(root))
    assert line.split()[2] == "DF115" and "(and 1 more: DF120;" in line


# --- odd but parseable configs: one line before any load ------------------------------------------------


@pytest.mark.parametrize("draft, target, text", [
    ({"rope_scaling": "yarn"}, None, "`rope_scaling` should be a valid dictionary"),
    (None, {"rope_scaling": ["linear"]}, "`rope_scaling` should be a valid dictionary"),
    ({"num_hidden_layers": []}, None, "`num_hidden_layers` should be a valid integer"),
    (None, {"num_hidden_layers": []}, "`num_hidden_layers` should be a valid integer"),
    (None, {"text_config": "qwen3"}, "`text_config` should be a JSON object"),
    ({"hidden_size": True}, None, "`hidden_size` should be a valid integer"),
    (None, {"vocab_size": False}, "`vocab_size` should be a valid integer"),
    ({"dflash_config.block_size": 10**9}, None, "DF115"),
    ({"dflash_config.target_layer_ids": [0, 99]}, None, "DF104"),
    ({"dflash_config.mask_token_id": 10**6}, None, "DF112"),
])
def test_odd_configs_are_one_line_before_any_load(tmp_path, no_load, draft, target, text):
    assert text in _one_line(_smoke(_pair(tmp_path, draft=draft, target=target)))


@pytest.mark.parametrize("args, text", [
    (["--seed", str(2**64)], "seed"),
    (["--temperature", "nan"], "'--temperature': 'nan' is not a finite number"),
    (["--temperature", "1e-300"], "temperature 1e-300"),
    (["--block-size", str(10**9)], "--block-size 1000000000 must be between 1 and the draft's block_size 8"),
])
def test_option_values_are_one_line_before_any_load(tmp_path, no_load, args, text):
    assert text in _one_line(_smoke(_pair(tmp_path), *args))


# --- every refusal of the runtime's draft config is a rule the check reports ------------------------------

def _configs():
    from tests.configs import DELETE, draft, speculators_draft

    ids = "dflash_config.target_layer_ids"
    return {
        "speculators": speculators_draft(), "gelu": draft(hidden_act="gelu"),
        "no heads": draft(num_attention_heads=DELETE), "no intermediate": draft(intermediate_size=DELETE),
        "no mask": draft(**{"dflash_config.mask_token_id": DELETE}),
        "no ids": draft(**{ids: DELETE}, num_target_layers=DELETE), "empty ids": draft(**{ids: []}),
        "negative id": draft(**{ids: [-1, 3]}), "short layer_types": draft(layer_types=["full_attention"]),
        "odd layer_types": draft(layer_types=["linear_attention"] * 5),
        "mrope": draft(rope_scaling={"rope_type": "default", "mrope_section": [1, 2, 3]}),
        "dynamic": draft(rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
        "block 0": draft(block_size=0, **{"dflash_config.block_size": 0}),
        "v2 without its keys": draft(architectures=["DFlash2DraftModel"]),
        "v2 odd group": draft(architectures=["DFlash2DraftModel"], **{
            "dflash_config.conv_kernel_size": 3, "dflash_config.conv_group_size": 7,
            "dflash_config.selector_rank": 4, "dflash_config.selector_top_k": 6}),
    }


@pytest.mark.parametrize("name", list(_configs()))
@pytest.mark.parametrize("engine", ["dflash", "mlx"])
def test_every_runtime_draft_refusal_is_a_refusing_finding(name, engine):
    from dflash_compat.checker import RuleContext, check_rules
    from dflash_compat.cli.commands.smoke_preflight import RUNTIME_LIMITS
    from dflash_compat.exceptions import DFlashCompatError
    from dflash_compat.rules import ALL_RULES
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.specs import parse_draft_config, parse_target_config
    from tests.configs import target

    spec = parse_draft_config(_configs()[name], "draft")
    with pytest.raises(DFlashCompatError):
        draft_config(spec)
    ctx = RuleContext(target=parse_target_config(target(), "target"), draft=spec)
    found = check_rules(ctx, [r for r in ALL_RULES if not r.needs], (engine,)).findings
    assert [f.code for f in found if f.severity == "error" or f.code in RUNTIME_LIMITS], name
