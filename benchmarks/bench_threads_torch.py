"""`dflash-check smoke` (torch, CPU) decode speed by intra-op thread count, on a quiet and on a busy machine.

Each run is a fresh `python -m dflash_compat smoke ... -f json` process (torch reads its thread
settings at start-up), without OMP_NUM_THREADS / MKL_NUM_THREADS. Thread settings: torch's own
default (as before dflash-check chose: one thread per physical core), 1, 2, and no flag (the
choice of dflash_compat/runtime/threads.py). Conditions: as the machine is, and with one busy-loop
process per core competing (what a shared CI runner or a laptop doing other work looks like).
Figures: median decode tokens/s of the speculative run and of the greedy baseline over --repeats.

Run: .venv/bin/python benchmarks/bench_threads_torch.py [--repeats 3] [--models tiny,small] [--update-docs]
--update-docs writes the table into docs/runtime.md between the bench_threads_torch markers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "docs" / "runtime.md"
BEGIN, END = "<!-- bench_threads_torch: begin -->", "<!-- bench_threads_torch: end -->"
PROMPT = "1,5,9,3,7,2,4,8,6,1,3,5"
SMALL = dict(vocab=512, hidden=256, layers=16, heads=8, kv_heads=2, head_dim=32, intermediate=512)


def _models(names: list[str], tmp: Path) -> dict[str, tuple[Path, Path]]:
    out = {}
    if "tiny" in names:  # the example pair of the README (hidden 32, 4 layers, vocab 64)
        out["tiny example pair (examples/tiny-qwen3)"] = (ROOT / "examples/tiny-qwen3/target",
                                                          ROOT / "examples/tiny-qwen3/draft")
    if "small" in names:  # about 10M parameters: where a second thread starts to pay, if anywhere
        from tests.tiny_dflash import make_pair

        _, _, draft = make_pair(tmp, seed=0, block_size=8, target=SMALL, draft=dict(layers=3, target_layer_ids=(1, 7, 13)),
                                save_target=True)
        out["small pair (hidden 256, 16 layers, vocab 512; ~10M params)"] = (tmp / "target", draft)
    return out


def _smoke(target: Path, draft: Path, threads: int | None, new: int) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    args = [sys.executable, "-m", "dflash_compat", "smoke", str(target), "--draft", str(draft), "--prompt-ids", PROMPT,
            "--max-new-tokens", str(new), "--device", "cpu", "-f", "json"]
    if threads is not None:
        args += ["--threads", str(threads)]
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    if res.returncode != 0:
        raise SystemExit(f"smoke failed ({res.returncode}): {res.stderr.strip()}")
    r = json.loads(res.stdout)["results"][0]
    return r["decode_tokens_per_s"], r["baseline_tokens_per_s"]


def _torch_default_threads() -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True, env=env, check=True)
    return int(out.stdout)


class _Load:
    """One busy-loop process per core, for the duration of a `with` block."""

    def __init__(self, n: int) -> None:
        self.n, self.procs = n, []

    def __enter__(self) -> "_Load":
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        time.sleep(15)  # let the load average see them (it lags by about a minute)
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def _measure(models: dict, settings: list, repeats: int, new: int, label: str) -> list[dict]:
    rows = []
    for name, (target, draft) in models.items():
        for setting_name, threads in settings:
            spec, base, loads = [], [], []
            for _ in range(repeats):
                loads.append(os.getloadavg()[0])
                s, b = _smoke(target, draft, threads, new)
                spec.append(s)
                base.append(b)
            row = dict(model=name, condition=label, threads=setting_name, spec=statistics.median(spec),
                       baseline=statistics.median(base), load=statistics.median(loads))
            print(f"  {label:12} {name[:40]:40} {setting_name:28} spec {row['spec']:7.1f} tok/s  "
                  f"baseline {row['baseline']:7.1f} tok/s  (load {row['load']:.1f})", flush=True)
            rows.append(row)
    return rows


def _table(rows: list[dict], cores: int, default: int) -> str:
    import torch

    lines = [f"Measured {time.strftime('%Y-%m-%d')}: torch {torch.__version__}, {cores} cores (torch's default: "
             f"{default} threads), `smoke --max-new-tokens {ARGS.new}` on one prompt, median of {ARGS.repeats} "
             "runs each; \"busy\" adds one busy-loop process per core. The load column is the 1-minute load "
             "average when the runs started (other jobs share this machine).",
             "",
             "| model | machine | threads | spec tok/s | baseline tok/s | load |",
             "|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['condition']} | {r['threads']} | {r['spec']:.1f} | {r['baseline']:.1f} "
                     f"| {r['load']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new", type=int, default=64, help="new tokens per run")
    ap.add_argument("--models", default="tiny,small")
    ap.add_argument("--update-docs", action="store_true")
    ARGS = ap.parse_args()
    from dflash_compat.runtime.threads import physical_cores

    cores, default = physical_cores(), _torch_default_threads()
    settings = [(f"torch default ({default})", default), ("1", 1), ("2", 2), ("auto (no flag)", None)]
    with tempfile.TemporaryDirectory() as tmp:
        models = _models(ARGS.models.split(","), Path(tmp))
        rows = _measure(models, settings, ARGS.repeats, ARGS.new, "as it is")
        with _Load(cores):
            rows += _measure(models, settings, ARGS.repeats, ARGS.new, "busy")
    table = _table(rows, cores, default)
    print("\n" + table)
    if ARGS.update_docs:
        text = DOCS.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOCS.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")
        print(f"written to {DOCS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
