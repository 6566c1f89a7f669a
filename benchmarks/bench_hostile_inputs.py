"""Cost of `dflash-check` on big hostile inputs, growing by 10x: the work must stay linear (issue 15).

Run: .venv/bin/python benchmarks/bench_hostile_inputs.py [--runs 3]
Cases: a generation config listing N EOS ids (half repeated; 689 KB took 139 s before the fix),
a draft listing N target layer ids (50,000 took 173 s to render), a target config with N layers
(the deep check built N meta modules: > 240 s at 10**5). Each is timed as a whole process, config-only
check (text report) or deep check; the CPU time (user + system) of the child is reported besides
wall time, since it moves less with the machine's other load. Results: docs/security.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.configs import QWEN3_8B, QWEN3_8B_DRAFT, merge  # noqa: E402


def _pair(root: Path, target: dict, draft: dict, gen: dict | None = None) -> None:
    for name, cfg in (("t", target), ("d", draft)):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(cfg))
    if gen is not None:
        (root / "t" / "generation_config.json").write_text(json.dumps(gen))


def eos_ids(root: Path, n: int) -> list[str]:
    _pair(root, QWEN3_8B, QWEN3_8B_DRAFT, {"eos_token_id": list(range(n // 2)) * 2})
    return ["t", "--draft", "d", "--no-deep"]


def layer_ids(root: Path, n: int) -> list[str]:
    _pair(root, QWEN3_8B, merge(QWEN3_8B_DRAFT, **{"dflash_config.target_layer_ids": list(range(n))}))
    return ["t", "--draft", "d", "--no-deep"]


def layers_deep(root: Path, n: int) -> list[str]:
    _pair(root, merge(QWEN3_8B, num_hidden_layers=n), merge(QWEN3_8B_DRAFT, num_target_layers=n))
    return ["t", "--draft", "d"]


CASES = {"EOS ids in generation_config.json": (eos_ids, (12_000, 120_000, 1_200_000)),
         "draft target_layer_ids": (layer_ids, (5_000, 50_000, 500_000)),
         "target num_hidden_layers, deep check": (layers_deep, (10**5, 10**6, 10**7))}


def _time(args: list[str], cwd: Path) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "dflash_compat", *args], cwd=cwd, capture_output=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, res.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    print(f"{'case':40s} {'N':>10s} {'wall s':>8s} {'cpu s':>8s} exit")
    for label, (build, sizes) in CASES.items():
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                args = build(Path(tmp), n)
                runs = [_time(args, Path(tmp)) for _ in range(opts.runs)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"{label:40s} {n:>10d} {wall:8.2f} {cpu:8.2f} {runs[0][2]}", flush=True)


if __name__ == "__main__":
    main()
