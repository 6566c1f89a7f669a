"""How well `recommend`'s speed-up model predicts the speed-up `smoke` measures (issue 13, target: within 20%
at the recommended K).

A small random-weight Qwen3 target (CPU, one thread) and a DFlash draft whose forward really runs but
whose proposals are the target's own greedy continuation with each token wrong with probability
ERROR (the replay proposer, dflash_compat/liveprobe/reference.py): per-position acceptance ~ (1-ERROR)^k,
like a trained draft, without training one.

1. The smoke protocol (commands/smoke.py run_prompts, with --profile-out's extra short-block timing) at
   the draft's block size -> an acceptance profile with the measured draft / verify costs.
2. recommend -> K* and the modelled speed-up S(K) for every K.
3. The smoke protocol again at block size K+1 for K* and a few other K, repeated; the measured
   speed-up (median) is compared with S(K).

Run: .venv/bin/python benchmarks/bench_recommend.py [--repeats 3] [--error 0.15] [--new 96]
Results: docs/serving.md ("Choosing K").
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = dict(vocab=512, hidden=256, layers=8, heads=8, kv_heads=2, head_dim=32, intermediate=512)
DRAFT = dict(layers=2, target_layer_ids=(1, 4, 6))
BLOCK = 16


def _smoke(rt, draft, target, proposer, prompts, new, block, profile_block=None):
    """The smoke protocol, one prompt per call (the proposer replays that prompt's greedy sequence)."""
    from dflash_compat.cli.commands.smoke import SmokeRequest, SmokeRun, run_prompts

    runs = []
    for ids in prompts:
        greedy = rt.greedy_generate(target, ids, max_new_tokens=new + BLOCK, timed=False).tokens
        proposer.follow(list(ids) + list(greedy))
        req = SmokeRequest(target="-", draft="-", prompt_ids=[ids], max_new_tokens=new, block_size=block,
                           profile_block_size=profile_block)
        runs += run_prompts(rt, draft, target, [ids], req, lambda: None, lambda n: None)[1]
    return SmokeRun("torch", "cpu", "float32", block, runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--error", type=float, default=0.15, help="probability that a replayed draft token is wrong")
    ap.add_argument("--new", type=int, default=96, help="new tokens per prompt")
    ap.add_argument("--prompts", type=int, default=4)
    args = ap.parse_args()

    import torch

    from dflash_compat.cli.commands.recommend import recommend_doc
    from dflash_compat.cli.commands.smoke import build_payload
    from dflash_compat.liveprobe.profile import modelled_speedup, profile_from_smoke
    from dflash_compat.liveprobe.reference import ReplayProposer
    from dflash_compat.runtime import torch_generate as rt
    from dflash_compat.runtime.torch_target import target_for
    from tests.tiny_dflash import make_pair

    torch.set_num_threads(1)
    rng = random.Random(0)
    prompts = [[rng.randrange(TARGET["vocab"]) for _ in range(24)] for _ in range(args.prompts)]
    with tempfile.TemporaryDirectory() as tmp:
        model, _, folder = make_pair(Path(tmp), seed=0, block_size=BLOCK, target=TARGET, draft=DRAFT)
        target = target_for(model)
        draft = rt.load_draft(str(folder), dtype=torch.float32)
    proposer = ReplayProposer(draft, args.error, seed=1)

    run = _smoke(rt, draft, target, proposer, prompts, args.new, BLOCK, profile_block=2)
    profile = profile_from_smoke(run, build_payload(run, 0.0)["summary"]["speedup"])
    doc = recommend_doc(profile, None, "DRAFT")
    best = doc["recommended_k"]
    per, cost = profile["per_position_acceptance"], doc["cost"]
    print(f"profile: tau {profile['mean_acceptance']:.2f}, per-position {[round(p, 2) for p in per]}")
    print(f"cost (x plain step): draft {cost['draft']:.3f}, verify +{cost['verify_per_token']:.3f}/token; "
          f"recommended K = {best}, modelled {doc['modelled_speedup']:.2f}x")

    rows = []
    for k in sorted({1, 3, best, 7, BLOCK - 1}):
        measured = [build_payload(_smoke(rt, draft, target, proposer, prompts, args.new, k + 1), 0.0)["summary"]["speedup"]
                    for _ in range(args.repeats)]
        model_s = modelled_speedup(per, cost, k)
        med = statistics.median(measured)
        rows.append({"k": k, "modelled": model_s, "measured_median": med, "measured": measured,
                     "error": (model_s - med) / med})
        print(f"K={k:2d}{' *' if k == best else '  '} modelled {model_s:.2f}x  measured {med:.2f}x "
              f"({', '.join(f'{x:.2f}' for x in measured)})  error {100 * (model_s - med) / med:+.1f}%")
    at_best = next(r for r in rows if r["k"] == best)
    ok = abs(at_best["error"]) <= 0.20
    print(json.dumps({"recommended_k": best, "error_at_recommended_k": at_best["error"], "within_20_percent": ok,
                      "rows": rows}, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
