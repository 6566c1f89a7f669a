"""Start-up cost of `dflash-check`, as whole processes, against the floor `import click, rich, pydantic`.

Run: .venv/bin/python benchmarks/bench_cli_startup.py [--runs 15]
Target (issue #2): `--help` and a config-only check each <= 1.5x the floor. Results: README.md,
"Measured figures". A second reference line builds and validates one small pydantic model, since
`import pydantic` alone is lazy and loads none of pydantic's model machinery. Besides wall time,
the CPU time (user + system) of each process is reported: on a shared machine it moves less with
the other load than wall time does, and the best (fastest) run: the closest to a quiet machine.

Every process runs with bytecode caching on (PYTHONDONTWRITEBYTECODE unset, the cache in a temporary
PYTHONPYCACHEPREFIX), as an installed package does: with PYTHONDONTWRITEBYTECODE=1 in the caller's
environment the children would otherwise compile every module from source on every run. They run in
an empty folder, as in a project without dflash-check settings (this repository's own pyproject.toml
would be parsed for a [tool.dflash-check] table on every run).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
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


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CWD = tempfile.mkdtemp(prefix="dflash-bench-cwd-")  # no settings file here or above (/tmp)


def time_once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV, cwd=CWD)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="dflash-bench-pyc-")
    for cmd in COMMANDS.values():  # warm the OS file cache and the bytecode cache
        time_once(cmd)
    # interleave the commands so that machine noise hits them all alike
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            samples[name].append(time_once(cmd))
    wall = {name: statistics.median(w for w, _ in values) for name, values in samples.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in samples.items()}
    best = {name: min(w for w, _ in values) for name, values in samples.items()}
    floor, cpu_floor, best_floor = (next(iter(d.values())) for d in (wall, cpu, best))
    ref = list(COMMANDS)[1]
    print(f"{'command':50s} {'median s':>9s} {'x floor':>8s} {'cpu s':>7s} {'x floor':>8s} {'best s':>7s} "
          f"{'x ref':>6s}")
    for name in COMMANDS:
        print(f"{name:50s} {wall[name]:9.3f} {wall[name] / floor:8.2f} {cpu[name]:7.3f} {cpu[name] / cpu_floor:8.2f} "
              f"{best[name]:7.3f} {best[name] / best[ref]:6.2f}")


if __name__ == "__main__":
    main()
