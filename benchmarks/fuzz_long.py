"""The long fuzz run: the strategies of tests/test_fuzz.py for many more cases, every failure kept.

Each case (a mutated real config pair, a hostile safetensors header, a hostile command line) runs
dflash-check in this process and is judged by the contract (tests/fuzz/runner.py): exit 0/1 with a
report, or exit 2 with one stderr line; no traceback, no hang, inputs byte-identical. Unlike the CI
test, a failure does not stop the run: failures are grouped by signature (kind, exception type,
location), and the first case of each is shrunk (parts dropped while the signature stays) and
printed as a reproducer. Results: docs/fuzzing.md.

    nice -n 10 .venv/bin/python benchmarks/fuzz_long.py --cases 10000 --seed 1

`--walk` runs the option walker instead (tests/fuzz/walker.py, issue #24): every parameter of every
command, read from click's command tree, with every hostile value of its type (the CI test runs a
sample); `--walk-real` gives the heavy commands (smoke, train) the real demo pair, so valid values run
the models. Judged the same way: exit 0/1/2, never 3, never a traceback, exit 2 one line.

    nice -n 10 .venv/bin/python benchmarks/fuzz_long.py --walk [--walk-real] [--json-out walk.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one intra-op thread (as tests/conftest.py)

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.fuzz.cases import Case, materialize, shrink_candidates  # noqa: E402
from tests.fuzz.options import KINDS, any_case  # noqa: E402
from tests.fuzz.runner import run_case, violation, warm_up  # noqa: E402

DEFAULT_MIX = "config=40,config-deep=10,header=20,options=15,smoke=12,config-deep-full=3"


def shrink(case: Case, signature: str, limit: float, budget_s: float) -> Case:
    """Drop parts of `case` one at a time while it still fails with the same signature, for at most
    `budget_s` seconds (a hang costs `limit` seconds a try)."""
    deadline = time.monotonic() + budget_s
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for smaller in shrink_candidates(case):
            if time.monotonic() >= deadline:
                break
            if violation(run_case(smaller, limit)) == signature:
                case, improved = smaller, True
                break
    return case


def walk(full: bool, json_out: str | None, limit: float) -> int:
    """Every value of every parameter (tests/fuzz/walker.py); counts by exit code and kind, failures listed."""
    import tempfile

    from tests.fuzz import walker

    params = walker.walk()
    walker.mark_required()
    codes: collections.Counter = collections.Counter()
    by_kind: collections.Counter = collections.Counter()
    failures: list[dict] = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dflash-walk-corpus-") as tmp:
        corpus = walker.Corpus(Path(tmp))
        for n, (param, label, argv) in enumerate(walker.cases(params, corpus, None, full=full), 1):
            out = walker.run_one(param, label, argv, limit)
            codes[str(out.code)] += 1
            by_kind[param.kind] += 1
            why = walker.judge(out)
            if why is not None:
                failures.append({"param": param.key, "value": label, "why": why, "argv": [a[:80] for a in argv]})
                print(f"FAIL {param.key} <- {label}: {why}"[:400], flush=True)
            if n % 500 == 0:
                print(f"{n} runs, {time.monotonic() - start:.0f} s, {len(failures)} failures", flush=True)
    total = sum(codes.values())
    elapsed = time.monotonic() - start
    print(f"\nwalked {len(params)} parameters of {len({p.command for p in params})} commands: {total} runs in "
          f"{elapsed:.0f} s ({'real pair' if full else 'fast bases'})")
    print("runs by kind:", dict(sorted(by_kind.items())))
    print("exit codes:", dict(sorted(codes.items())))
    print(f"failures (traceback, exit 3, exit 2 not one line, NaN accepted): {len(failures)}")
    if json_out:
        Path(json_out).write_text(json.dumps({"parameters": len(params), "runs": total, "seconds": round(elapsed),
                                              "real_pair": full, "exit_codes": dict(codes),
                                              "by_kind": dict(by_kind), "failures": failures}, indent=1))
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="number of cases to run")
    parser.add_argument("--seed", type=int, default=1, help="hypothesis seed (the same seed, the same cases)")
    parser.add_argument("--mix", default=DEFAULT_MIX, help=f"kind=weight,... (default {DEFAULT_MIX})")
    parser.add_argument("--limit", type=float, default=15.0, help="seconds before a case counts as a hang")
    parser.add_argument("--memory-gib", type=float, default=8.0, help="address-space cap (a blow-up fails fast)")
    parser.add_argument("--shrink-s", type=float, default=120.0, help="seconds to spend shrinking each failure")
    parser.add_argument("--json-out", help="write the summary to this JSON file")
    parser.add_argument("--repro-dir", help="write each shrunk reproducer's folders here (DIR/N/, with its command)")
    parser.add_argument("--walk", action="store_true", help="run the option walker over every command instead")
    parser.add_argument("--walk-real", action="store_true", help="with --walk: heavy commands get the real demo pair")
    args = parser.parse_args()
    if args.walk:
        return walk(args.walk_real, args.json_out, max(args.limit, 60.0))
    mix = {k: int(w) for k, w in (part.split("=") for part in args.mix.split(","))}
    unknown = set(mix) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}; known: {sorted(KINDS)}")
    cap = int(args.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    warm_up()

    counts: collections.Counter = collections.Counter()
    codes: collections.Counter = collections.Counter()
    seconds: collections.Counter = collections.Counter()
    failures: dict[str, list[Case]] = collections.defaultdict(list)
    slowest = (0.0, None)
    start = time.monotonic()

    @seed(args.seed)
    @settings(max_examples=args.cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(any_case(mix))
    def one(case: Case) -> None:
        nonlocal slowest
        out = run_case(case, args.limit)
        kind = case.tags[0]
        counts[kind] += 1
        codes[str(out.code)] += 1
        seconds[kind] += out.seconds
        slowest = max(slowest, (out.seconds, case.argv()), key=lambda s: s[0])
        sig = violation(out)
        if sig is not None:
            if sig not in failures:
                print(f"new failure after {sum(counts.values())} cases: {sig}\n  {case!r}"[:1500], flush=True)
            failures[sig].append(case)
        done = sum(counts.values())
        if done % 500 == 0:
            print(f"{done} cases, {time.monotonic() - start:.0f} s, {len(failures)} signatures", flush=True)

    one()
    elapsed = time.monotonic() - start
    total = sum(counts.values())
    print(f"\n{total} cases in {elapsed:.0f} s ({total / elapsed:.1f} cases/s), seed {args.seed}")
    print("by kind:", ", ".join(f"{k} {n} ({seconds[k] / n:.2f} s each)" for k, n in sorted(counts.items())))
    print("exit codes:", dict(sorted(codes.items())))
    print(f"slowest case: {slowest[0]:.1f} s: dflash-check {' '.join(slowest[1] or [])}")
    print(f"failure signatures: {len(failures)}")
    summary = {"cases": total, "seconds": round(elapsed), "seed": args.seed, "mix": mix, "by_kind": dict(counts),
               "exit_codes": dict(codes), "failures": {}}
    for n, (sig, cases) in enumerate(sorted(failures.items()), 1):
        small = shrink(cases[0], sig, args.limit, args.shrink_s)
        print(f"\n[{len(cases)} cases] {sig}\n  reproducer: {small!r}\n  dflash-check {' '.join(small.argv())}")
        summary["failures"][sig] = {"count": len(cases), "reproducer": repr(small)}
        if args.repro_dir:
            folder = materialize(small, Path(args.repro_dir) / str(n))
            (folder / "command").write_text(" ".join(["dflash-check", *map(shlex.quote, small.argv())]) + "\n")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
