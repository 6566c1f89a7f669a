"""The bundled demo pair (examples/demo) in our PyTorch runtime: speed-up of DFlash over plain greedy
decoding on this machine's CPU cores, with tau and the lossless check.

For each held-out prompt of examples/demo/prompts.txt, interleaved repeats of spec_generate and
greedy_generate (64 new tokens: smoke's default, as the README runs it); decode tokens/s of each, the
speed-up of the summed decode times (what `dflash-check smoke` reports), and the same from thread
CPU time, which other processes on a shared machine barely move. The load average is recorded.

Run: .venv/bin/python benchmarks/bench_demo_pair.py [--threads 1 2] [--repeats 3]
Target (issue #14): a measured speed-up > 1 on 2 CPU cores. Results: docs/demo.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"


def run(threads: int, repeats: int, new_tokens: int) -> dict:
    import torch
    from transformers import AutoTokenizer

    from dflash_compat.runtime.torch_generate import (
        greedy_generate,
        load_draft,
        load_target,
        spec_generate,
        stop_tokens_of,
    )

    torch.set_num_threads(threads)
    target, draft = load_target(DEMO / "target"), load_draft(DEMO / "draft")
    tokenizer = AutoTokenizer.from_pretrained(str(DEMO / "target"))
    prompts = [tokenizer(line)["input_ids"] for line in (DEMO / "prompts.txt").read_text().splitlines() if line.strip()]
    stops = stop_tokens_of(target)
    spec_generate(draft, target, prompts[0], max_new_tokens=8, stop_token_ids=stops)  # warm-up
    greedy_generate(target, prompts[0], max_new_tokens=8, stop_token_ids=stops)
    wall = {"spec": [], "base": []}
    cpu = {"spec": [], "base": []}
    lengths, lossless, tokens = [], True, {"spec": 0, "base": 0}
    for _ in range(repeats):
        sums = {"spec": [0.0, 0.0, 0], "base": [0.0, 0.0, 0]}
        for ids in prompts:
            for kind in ("spec", "base"):
                c0 = time.thread_time()
                if kind == "spec":
                    res = spec_generate(draft, target, ids, max_new_tokens=new_tokens, stop_token_ids=stops)
                    lengths += res.stats.acceptance_lengths
                    spec_tokens = res.tokens
                else:
                    res = greedy_generate(target, ids, max_new_tokens=new_tokens, stop_token_ids=stops)
                    lossless &= res.tokens == spec_tokens
                # decode time only (the prefill is the same work in both), CPU share of the whole call
                sums[kind][0] += res.stats.decode_s
                sums[kind][1] += time.thread_time() - c0
                sums[kind][2] += res.stats.decode_tokens
        for kind in sums:
            wall[kind].append(sums[kind][2] / sums[kind][0])
            cpu[kind].append(sums[kind][1])
            tokens[kind] = sums[kind][2]
    speedups = [s / b for s, b in zip(wall["spec"], wall["base"])]
    return {
        "threads": threads, "prompts": len(prompts), "new_tokens": new_tokens, "repeats": repeats,
        "lossless": lossless, "tau": round(sum(lengths) / len(lengths), 3),
        "spec_tokens_per_s": round(statistics.median(wall["spec"]), 1),
        "baseline_tokens_per_s": round(statistics.median(wall["base"]), 1),
        "speedup_median": round(statistics.median(speedups), 3), "speedup_best": round(max(speedups), 3),
        "speedup_cpu_time": round(statistics.median(cpu["base"]) / statistics.median(cpu["spec"]), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=64)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    load = os.getloadavg()
    rows = [run(t, args.repeats, args.new_tokens) for t in args.threads]
    print(json.dumps({"cpu_count": os.cpu_count(), "load_before": [round(x, 2) for x in load],
                      "load_after": [round(x, 2) for x in os.getloadavg()], "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
