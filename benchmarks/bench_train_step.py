"""Seconds per `dflash-check train` step on the bundled demo target, for three settings: the command's
defaults, the settings the demo draft was trained with (docs/demo.md), and a quick setting.

Run: .venv/bin/python benchmarks/bench_train_step.py [--steps 8] [--data FOLDER] [--only quick]
(OMP_NUM_THREADS=1 in the environment: one torch thread per process, what a shared machine wants)
Each setting runs `dflash-check train` as a user would (a fresh process, a config-only draft from
init-draft: 1 layer, block 8, layer ids 1,4, mask token 1 as in the demo) with --eval-every 0; the
figure is the mean time of the steps before the last (the progress line's s/step: its last step also
runs the held-out evaluation and the export). Data: a folder of the standard library's .py files
(the `email` package by default, ~0.9 MB of text). Results: docs/training.md, "How long it takes".
"""

from __future__ import annotations

import argparse
import email
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "examples" / "demo" / "target"
SETTINGS = {
    "defaults (8 x 512, 256 anchors)": [],
    "demo draft's (8 x 128, 64 anchors)": ["--batch-size", "8", "--seq-len", "128", "--anchors", "64"],
    "quick (4 x 128, 32 anchors)": ["--batch-size", "4", "--seq-len", "128", "--anchors", "32"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--data", default=str(Path(email.__file__).parent))
    ap.add_argument("--only", help="run only the settings whose name contains this word (e.g. quick)")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "dflash_compat"]
    threads = os.environ.get("OMP_NUM_THREADS", "torch's default")
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs; OMP_NUM_THREADS {threads}")
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft"
        subprocess.run([*cli, "init-draft", str(TARGET), "-o", str(draft), "--layers", "1", "--block-size", "8",
                        "--layer-ids", "1,4", "--mask-token-id", "1"], check=True, capture_output=True)
        for name, extra in SETTINGS.items():
            if args.only and args.only not in name:
                continue
            out = Path(tmp) / re.sub(r"\W+", "-", name)
            t0 = time.perf_counter()
            res = subprocess.run([*cli, "train", str(TARGET), "--draft", str(draft), "--data", args.data, "-o",
                                  str(out), "--steps", str(args.steps), "--eval-every", "0", "--checkpoint-every", "0",
                                  *extra], capture_output=True, text=True)
            wall = time.perf_counter() - t0
            lines = [ln for ln in res.stderr.splitlines() if ln.startswith("step ")]
            if res.returncode != 0 or len(lines) < 2:
                print(f"{name}: failed ({res.returncode}): {res.stderr[-500:]}")
                continue
            per = float(re.search(r"([\d.]+) s/step", lines[-2]).group(1))
            first = float(re.search(r"([\d.]+) s/step", lines[0]).group(1))
            print(f"{name:38s} {per:6.2f} s/step (first step {first:.2f} s; whole process {wall:.0f} s "
                  f"for {args.steps} steps)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
