"""Decode speed of our MLX runtime against the dflash package's MLX path on the same weights.

For each tiny target (random weights, built here) and a random draft saved in the z-lab layout,
both runtimes generate the same greedy tokens (checked) from the same prompt; we time the whole
generation call end to end (prefill included, the same work on both sides) and report tokens/s
and the speed ratio ours / theirs (target: >= 1.0x), by wall clock and by CPU time. Best of --repeat
interleaved runs, after a warm-up.

    .venv/bin/python benchmarks/bench_runtime_mlx.py [--tokens 128] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mlx.core as mx  # noqa: E402

from tests import mlx_models as tm  # noqa: E402

SMALL = dict(tm.TARGETS["qwen3"], hidden_size=128, num_hidden_layers=6, intermediate_size=384, num_attention_heads=4,
             num_key_value_heads=2, head_dim=32, vocab_size=1024)
CASES = {
    "qwen3 (h32, 4 layers, V32)": (tm.TARGETS["qwen3"], dict(layers=1)),
    "qwen3_5 hybrid (GDN replay)": (tm.TARGETS["qwen3_5"], dict(layers=1)),
    "llama sliding window 4": (tm.TARGETS["llama_swa"], dict(layers=1)),
    "qwen3 small (h128, 6 layers, V1024)": (SMALL, dict(layers=2, head_dim=32)),
}


def _ours(model, cfg, folder, prompt, n, bs):
    from dflash_compat.runtime import mlx_generate as rt
    from dflash_compat.runtime.mlx_draft import load_draft

    target, draft = rt.target_for(model, cfg), load_draft(folder)

    def run():
        out = rt.spec_generate(draft, target, prompt, max_new_tokens=n, block_size=bs)
        return out.tokens, out.stats.tau

    return run


def _theirs(model, folder, prompt, n, bs):
    from dflash import model_mlx
    from mlx_lm.tokenizer_utils import TokenizerWrapper

    model_mlx.snapshot_download = lambda repo, **kw: repo  # a local folder, not a Hub id
    draft = model_mlx.load_draft(str(folder))
    tokenizer = TokenizerWrapper(tm.make_tokenizer())
    tokenizer.eos_token_ids = []

    def run():
        tokens = []
        for r in model_mlx.stream_generate(model, draft, tokenizer, mx.array(prompt), block_size=bs, max_tokens=n):
            tokens += r.tokens
        return tokens, None

    return run


def _time_pair(ours, theirs, repeat):
    """Best-of-`repeat` wall time and CPU time (all threads of this process, which is where MLX's CPU
    work runs) of each; the two interleaved so that load from other processes hits both alike, after
    one warm-up run each. On a shared machine the CPU-time figure is the stable one."""
    ours(), theirs()
    wall, cpu = [float("inf")] * 2, [float("inf")] * 2
    results = [None, None]
    for _ in range(repeat):
        for i, run in enumerate((ours, theirs)):
            t0, c0 = time.perf_counter(), time.process_time()
            results[i] = run()
            wall[i] = min(wall[i], time.perf_counter() - t0)
            cpu[i] = min(cpu[i], time.process_time() - c0)
    return wall, cpu, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--block-size", type=int, default=8)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    prompt = [5, 7, 9, 11, 3, 2, 8, 4, 6, 10, 12, 13]
    rows = []
    tmp = Path(tempfile.mkdtemp())
    for name, (cfg, dkw) in CASES.items():
        head_dim = dkw.pop("head_dim", 16)
        dcfg = tm.draft_config(cfg, block_size=args.block_size, head_dim=head_dim, **dkw)
        folder = tm.save_draft(tmp / name.split()[0], dcfg, seed=1)
        # the reference hooks the model's layer list for good: it gets its own copy of the weights
        (ours_t, theirs_t), (ours_c, theirs_c), ((ours_tok, tau), (theirs_tok, _)) = _time_pair(
            _ours(tm.build_target(cfg), cfg, folder, prompt, args.tokens, args.block_size),
            _theirs(tm.build_target(cfg), folder, prompt, args.tokens, args.block_size), args.repeat)
        same = ours_tok == theirs_tok
        n = args.tokens
        rows.append({"case": name, "tokens": n, "tau": round(tau, 2), "same_tokens": same,
                     "ours_tok_s": round(n / ours_t, 1), "dflash_tok_s": round(n / theirs_t, 1),
                     "ratio_wall": round(theirs_t / ours_t, 2),
                     "ours_tok_per_cpu_s": round(n / ours_c, 1), "dflash_tok_per_cpu_s": round(n / theirs_c, 1),
                     "ratio_cpu": round(theirs_c / ours_c, 2)})
        print(f"{name:36s} tau {tau:4.2f} | wall: ours {n / ours_t:7.1f} dflash {n / theirs_t:7.1f} tok/s "
              f"{theirs_t / ours_t:4.2f}x | cpu: ours {n / ours_c:7.1f} dflash {n / theirs_c:7.1f} tok/cpu-s "
              f"{theirs_c / ours_c:4.2f}x | same tokens: {same}", flush=True)
    info = {"mlx": mx.__version__, "device": str(mx.default_device()), "block_size": args.block_size,
            "repeat": args.repeat, "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=2))


if __name__ == "__main__":
    main()
