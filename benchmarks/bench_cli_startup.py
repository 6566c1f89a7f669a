"""Start-up cost of `dflash-check`, as whole processes, against the floor `import click, rich, pydantic`.

Run: .venv/bin/python benchmarks/bench_cli_startup.py [--runs 15]
Target (issue #2): `--help` and a config-only check each <= 1.5x the floor. Results: README.md,
"Measured figures". A second reference line builds and validates one small pydantic model, since
`import pydantic` alone is lazy and loads none of pydantic's model machinery.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
GOOD = ROOT / "examples" / "qwen3-8b"

COMMANDS = {
    "floor: python -c 'import click, rich, pydantic'": [PY, "-c", "import click, rich, pydantic"],
    "ref: the floor + one pydantic model validated": [
        PY, "-c",
        "import click, rich\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int = 0\nM(x=1)",
    ],
    "dflash-check --help": [PY, "-m", "dflash_compat", "--help"],
    "dflash-check TARGET --draft DRAFT --no-deep": [
        PY, "-m", "dflash_compat", str(GOOD / "target"), "--draft", str(GOOD / "draft"), "--no-deep",
    ],
    "dflash-check ... --no-deep -f json": [
        PY, "-m", "dflash_compat", str(GOOD / "target"), "--draft", str(GOOD / "draft"), "--no-deep", "-f", "json",
    ],
}


def time_once(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    for cmd in COMMANDS.values():  # warm the OS file cache and __pycache__
        time_once(cmd)
    results: dict[str, float] = {}
    # interleave the commands so that machine noise hits them all alike
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            samples[name].append(time_once(cmd))
    for name, values in samples.items():
        results[name] = statistics.median(values)
    floor = next(iter(results.values()))
    print(f"{'command':50s} {'median s':>9s} {'x floor':>8s}")
    for name, value in results.items():
        print(f"{name:50s} {value:9.3f} {value / floor:8.2f}")


if __name__ == "__main__":
    main()
