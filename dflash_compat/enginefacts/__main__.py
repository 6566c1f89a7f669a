"""`python -m dflash_compat.enginefacts refresh [--wheels DIR] [--check]`: regenerate engine_support.json."""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from pathlib import Path

from ..contract import ENGINE_VERSIONS
from .build import DATA, SOURCES, default_cache, regenerate, write_atomically
from .source import LayoutError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dflash_compat.enginefacts", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    ref = sub.add_parser("refresh", help="Read the engine wheels and rewrite (or --check) engine_support.json.")
    ref.add_argument("--wheels", type=Path, help="Folder holding the engine wheels (or unpacked NAME-VERSION/ "
                     "folders); default: download them with pip into --cache.")
    ref.add_argument("--cache", type=Path, default=None, help="Download folder (default: "
                     "$XDG_CACHE_HOME/dflash-compat/wheels).")
    ref.add_argument("--check", action="store_true", help="Do not write: exit 1 if the committed file differs.")
    ref.add_argument("--output", type=Path, default=DATA, help="The facts file to write or check; the "
                     "locations go to engine_sources.json next to it.")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        texts = regenerate(args.wheels, args.cache or default_cache())
    except (LayoutError, OSError) as e:
        print(f"enginefacts: {e}", file=sys.stderr)
        return 2
    took = time.perf_counter() - start
    versions = ", ".join(f"{k} {v}" for k, v in ENGINE_VERSIONS.items())
    paths = (args.output, args.output.with_name(SOURCES.name))
    if args.check:
        stale = [p for p, text in zip(paths, texts) if (p.read_text(encoding="utf-8") if p.exists() else "") != text]
        for path, text in zip(paths, texts):
            if path in stale:
                old = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
                diff = difflib.unified_diff(old, text.splitlines(), str(path), "regenerated", lineterm="", n=1)
                print("\n".join(list(diff)[:40]), file=sys.stderr)
        if stale:
            print(f"enginefacts: {', '.join(map(str, stale))} differ from the engines' code ({versions}); run "
                  "`python -m dflash_compat.enginefacts refresh`", file=sys.stderr)
            return 1
        print(f"{paths[0]} and {paths[1].name} are up to date ({versions}; {took:.1f} s)", file=sys.stderr)
        return 0
    try:
        for path, text in zip(paths, texts):
            write_atomically(path, text)
    except OSError as e:
        print(f"enginefacts: cannot write {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {paths[0]} and {paths[1].name} ({versions}; {took:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
