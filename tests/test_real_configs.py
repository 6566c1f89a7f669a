"""Full-size published configs (folders holding only config.json): the verdict per backend is right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

PAIRS = Path(__file__).resolve().parent / "fixtures" / "pairs"

# pair -> (verdict per backend, error/warning codes that must be among the findings)
EXPECTED = {
    "qwen3-8b": ({"transformers": "pass", "dflash": "pass", "vllm": "pass", "sglang": "pass", "mlx": "pass",
                  "llama.cpp": "pass"}, set()),
    "llama-3.1-8b": ({"transformers": "pass", "dflash": "pass", "vllm": "pass", "sglang": "pass", "mlx": "pass",
                      "llama.cpp": "pass"}, set()),
    # sliding-window layers: MLX ports that trim via trim_prompt_cache corrupt output once the window wraps;
    # the dflash reference must not crop past the window. SGLang leaves the draft unquantised without --quantization.
    "gpt-oss-20b": ({"transformers": "pass", "dflash": "warn", "vllm": "pass", "sglang": "pass", "mlx": "warn",
                     "llama.cpp": "pass"}, {"DF504", "DF202"}),
    # GatedDeltaNet hybrid: cropping cannot roll it back in the reference; SGLang's DFLASH commits the recurrent
    # state itself; transformers' native generate rolls it back from 5.25.0 where the model's code records the
    # state, which --no-deep does not read (a warning)
    "qwen3.5-35b-a3b": ({"transformers": "warn", "dflash": "fail", "vllm": "pass", "sglang": "pass", "mlx": "pass",
                         "llama.cpp": "pass"}, {"DF201"}),
    # SGLang 0.5.23's dense Qwen3-VL wrapper hands the DFlash hook to Qwen3LLMModel, which lacks it (qwen3_vl.py:1688);
    # llama.cpp b11434's qwen3vl graph does not fill t_layer_inp either (DF801: abort at the first decode)
    "qwen3-vl-8b": ({"transformers": "pass", "dflash": "pass", "vllm": "pass", "sglang": "fail", "mlx": "pass",
                     "llama.cpp": "fail"}, {"DF402", "DF801"}),
}


@pytest.mark.parametrize("pair", sorted(EXPECTED))
def test_verdicts_on_published_configs(pair):
    folder = PAIRS / pair
    res = CliRunner().invoke(
        cli, [str(folder / "target"), "--draft", str(folder / "draft"), "--no-deep", "-f", "json"],
        catch_exceptions=False,
    )
    report = json.loads(res.output)
    verdict, codes = EXPECTED[pair]
    assert report["summary"]["verdict"] == verdict, report["findings"]
    found = {f["code"] for f in report["findings"] if f["severity"] != "info"}
    assert codes <= found
    assert res.exit_code == (1 if "fail" in verdict.values() else 0)


def test_vlm_findings_point_into_text_config(tmp_path):
    folder = PAIRS / "qwen3-vl-8b"
    draft = json.loads((folder / "draft" / "config.json").read_text())
    draft["hidden_size"] = 2048
    (tmp_path / "config.json").write_text(json.dumps(draft))
    res = CliRunner().invoke(cli, [str(folder / "target"), "--draft", str(tmp_path), "--no-deep", "-f", "json"])
    finding = next(f for f in json.loads(res.output)["findings"] if f["code"] == "DF101")
    keys = {(loc["artifact"], loc["key"]) for loc in finding["locations"]}
    assert ("target", "text_config.hidden_size") in keys
