"""Training throughput per rank count on this machine's CPU: `dflash-check train --nproc-per-node N` (gloo)
against one process, in one run, so the ratio holds for the machine's load at that moment.

Run: .venv/bin/python benchmarks/bench_train_ranks.py [--ranks 1,2,4] [--steps 12] [--batch-size 4]
Each rank count trains the bundled demo target's draft (a config-only draft from init-draft: 1 layer,
block 8, layer ids 1,4, mask token 1, as the demo's) on the standard library's `email` package with the
same per-rank batch (`--batch-size 4 --seq-len 128 --anchors 32`: the global batch grows with the ranks),
one torch thread per rank, --eval-every 0. The figure per run: sequence tokens of the global batch per
second, from the median of its steps' own times (training.json's history: the optimizer steps, without the
start-up, the held-out evaluation of the last step and the export), and the ratio to one process.
Results: docs/training.md, "Several processes".
"""

from __future__ import annotations

import argparse
import email
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "examples" / "demo" / "target"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--data", default=str(Path(email.__file__).parent))
    args = ap.parse_args()
    cli = [sys.executable, "-m", "dflash_compat"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print(f"{time.strftime('%Y-%m-%d %H:%M')} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average before {os.getloadavg()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft"
        subprocess.run([*cli, "init-draft", str(TARGET), "-o", str(draft), "--layers", "1", "--block-size", "8",
                        "--layer-ids", "1,4", "--mask-token-id", "1"], check=True, capture_output=True, env=env)
        for n in [int(r) for r in args.ranks.split(",")]:
            out = Path(tmp) / f"r{n}"
            launch = ["--nproc-per-node", str(n)] if n > 1 else ["--threads", "1"]
            res = subprocess.run([*cli, "train", str(TARGET), "--draft", str(draft), "--data", args.data, "-o",
                                  str(out), "--steps", str(args.steps), "--batch-size", str(args.batch_size),
                                  "--seq-len", "128", "--anchors", "32", "--eval-every", "0", "--checkpoint-every",
                                  "0", "--device", "cpu", *launch], capture_output=True, text=True, env=env,
                                 timeout=1800)
            if res.returncode != 0:
                print(f"{n} ranks: failed ({res.returncode}): {res.stderr[-800:]}")
                continue
            info = json.loads((out / "training.json").read_text())
            step_s = statistics.median(h["seconds"] for h in info["history"][1:-1])
            rate = info["global_batch"] * 128 / step_s
            rows.append((n, info["global_batch"], step_s, rate))
    base = rows[0][3] if rows and rows[0][0] == 1 else None
    print(f"load average after: {os.getloadavg()}")
    print("| ranks | global batch | s/step (median) | tokens/s | vs 1 process |")
    print("|--:|--:|--:|--:|--:|")
    for n, batch, step_s, rate in rows:
        ratio = f"{rate / base:.2f}x" if base else "-"
        print(f"| {n} | {batch} | {step_s:.3f} | {rate:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
