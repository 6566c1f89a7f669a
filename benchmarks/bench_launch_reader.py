"""Cost of reading launch files near the 4 MiB bound (`dflash-check launch`, issue 36): the reader must stay
linear and finish well inside its 60 s per-file time bound.

Run: .venv/bin/python benchmarks/bench_launch_reader.py [--runs 3]
Cases (each about 4 MiB, just under the size bound): a shell script of launch lines with quotes,
expansions and constructs; a shell script of one huge quoted word; a compose file of many services; a
Kubernetes list of containers with block-scalar scripts. Each is read in this process by
`sources.candidates` + `parse.find_launch` (the part the time bound covers), CPU time reported besides
wall time. Results: docs/launch.md ("Bounds").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dflash_compat.launch.parse import find_launch  # noqa: E402
from dflash_compat.launch.sources import candidates  # noqa: E402
from dflash_compat.pipeline.launch import MAX_BYTES  # noqa: E402

LINE = ("X=(a b) ; f() { :; } ; vllm serve \"$MODEL\" --speculative-config '{\"method\": \"dflash\", \"model\": "
        "\"z-lab/d\"}' --tensor-parallel-size ${TP:-2} > log 2>&1 &\n")


def _fill(unit: str, head: str = "") -> str:
    n = (MAX_BYTES - len(head) - 1024) // len(unit.encode())
    return head + unit * n


CASES = {
    "shell launch lines": ("run.sh", lambda: _fill(LINE)),
    "one quoted word": ("run.sh", lambda: "echo '" + "x" * (MAX_BYTES - 64) + "'\n"),
    "compose services": ("docker-compose.yml", lambda: _fill(
        "  s{i}:\n    image: vllm/vllm-openai:v0.34.0\n    command: --model m --tensor-parallel-size 2\n",
        "services:\n").replace("{i}", "")),
    "k8s block scripts": ("k.yaml", lambda: _fill(
        "  - name: c\n    image: vllm/vllm-openai:v0.34.0\n    command: [bash, -c]\n    args:\n      - |\n"
        "        vllm serve m \\\n          --tensor-parallel-size 2\n", "kind: Pod\ncontainers:\n")),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for name, (file, make) in CASES.items():
        text = make()
        if name == "compose services":  # distinct service names
            parts = text.split("  s:\n")
            text = parts[0] + "".join(f"  s{i}:\n{p}" for i, p in enumerate(parts[1:]))
            text = text[:text.rfind("\n  s", 0, MAX_BYTES - 64) + 1]  # back under the size bound
        walls, cpus = [], []
        launches = 0
        for _ in range(args.runs):
            w0, c0 = time.perf_counter(), time.process_time()
            _, cands = candidates(file, text)
            launches = sum(1 for c in cands if find_launch(c) is not None)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        print(f"{name:22s} {len(text.encode()) / 2**20:5.2f} MiB  {launches:7d} launches  "
              f"wall {statistics.median(walls):6.2f} s  cpu {statistics.median(cpus):6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
