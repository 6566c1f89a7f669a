"""benchmarks/bench_gpu.py in its small CPU mode: every section runs and the JSON has every figure the GPU
table in docs/runtime.md reads (the numbers themselves mean nothing at these shapes)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_gpu.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_small_cpu_mode_writes_every_figure(tmp_path):
    threads = torch.get_num_threads()
    out = tmp_path / "gpu.json"
    try:
        result = _bench().main(["--small", "--device", "cpu", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    assert json.loads(out.read_text()) == json.loads(json.dumps(result, default=str))
    assert result["device"] == "cpu" and result["small"] is True and result["transformers"]
    demo = result["demo"]
    for dtype in ("float32", "bfloat16"):
        row = demo[dtype]
        assert row["verdict"] in ("lossless", "near-tie", "differs") and row["tau"] >= 1
        assert row["runtime"]["baseline"] in ("greedy-loop", "generate") and row["speedup"] > 0
        assert row["runtime"]["attention"] == "auto: flash > math (cpu)"
        if result["dflash"]:
            assert all(row["dflash"]["same_tokens_as_ours"])  # the reference decodes the same tokens
    assert demo["float32"]["verdict"] == "lossless"
    big = result["big"]
    assert set(big["greedy_ms_per_token"]) >= {"ours_dynamic", "ours_static", "generate_dynamic", "generate_static"}
    assert all(v > 0 for k, v in big["greedy_ms_per_token"].items() if k != "ours_static_graphs")
    assert big["greedy_ms_per_token"]["ours_static_graphs"] is None  # CUDA graphs: CUDA only
    assert set(big["step_ms"]) >= {"ours_dynamic", "ours_static"} and big["step_over_greedy_token"] > 0
    assert big["weight_bytes"] > 0
    assert big["launches_per_token"] is None and big["floor_ms_per_token"] is None  # CUDA-only figures
    for cache in ("dynamic", "static"):
        assert big["verdict"][cache]["verdict"] in ("lossless", "near-tie")
