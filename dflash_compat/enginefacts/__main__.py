"""`python -m dflash_compat.enginefacts refresh` (also `dflash-check facts refresh`): read engine wheels
into facts.

  refresh [--wheels DIR]                  every release of the bundled window -> dflash_compat/engines/data/engines/
  refresh --check [--wheels DIR]          regenerate the window; exit 1 if the bundled files differ or a
                                          fact is unknown at a bundled release
  refresh --engine vllm==0.34.1 ...       those releases -> $XDG_CACHE_HOME/dflash-compat/facts (the next
                                          check finds them); `--engine vllm`: the newest on the index
  refresh --engine vllm==0.35.0 --bundle  add the releases to the bundled window instead
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

from dflash_compat.enginefacts.build import PACKAGES, default_cache, locate, render, wheel_version, write_atomically
from dflash_compat.enginefacts.source import LayoutError, SourceTree
from dflash_compat.enginefacts.window import SECTION, STORE, build_common, extract_window, store_files
from dflash_compat.engines.registry import ENGINES, bundled_versions, cache_dir, parse_spec


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dflash-check facts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    ref = sub.add_parser("refresh", help="Read engine wheels into facts (the bundled window, or --engine releases).")
    ref.add_argument("--engine", action="append", default=[], metavar="NAME[==VERSION]",
                     help="An engine release to read (repeatable); without ==VERSION the newest on the index.")
    ref.add_argument("--bundle", action="store_true", help="Add the --engine releases to the bundled window "
                     "(maintainers) instead of the user cache.")
    ref.add_argument("--wheels", type=Path, help="Folder holding the engine wheels (or unpacked NAME-VERSION/ "
                     "folders, or NAME-VERSION.tar.gz source distributions); default: download them with pip into "
                     "--cache.")
    ref.add_argument("--cache", type=Path, default=None, help="Download folder (default: "
                     "$XDG_CACHE_HOME/dflash-compat/wheels).")
    ref.add_argument("--check", action="store_true", help="Do not write: exit 1 if the bundled files differ from "
                     "the wheels or a fact is unknown at a bundled release.")
    ref.add_argument("--typed-against", action="append", default=[], metavar="NAME==VERSION",
                     help="The release new citations without version= were typed against (default: "
                     "TYPED_AGAINST, else the newest bundled).")
    ref.add_argument("--output", type=Path, default=STORE, help=argparse.SUPPRESS)
    return ap


# The release each engine's citations without `version=` were typed against (the newest bundled when most were
# written; where it is not in the window, the newest bundled is); a new citation should name its release with
# `version=` (EngineSource), which wins over this.
TYPED_AGAINST = {"vllm": "0.33.0", "sglang": "0.5.23", "dflash": "0.1.0", "mlx-lm": "0.32.2",
                 "transformers": "5.24.0", "speculators": "0.9.0"}


def _requested(specs: list[str]) -> list[tuple[str, Optional[str]]]:
    out = []
    for spec in specs:
        if "==" in spec:
            out.append(parse_spec(spec, "--engine"))
        elif spec.strip().lower() in ENGINES and spec.strip().lower() in PACKAGES:
            out.append((spec.strip().lower(), None))
        else:
            parse_spec(spec, "--engine")  # raises the one-line error
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from dflash_compat.exceptions import DFlashCompatError

    start = time.perf_counter()
    try:
        requested = _requested(args.engine)
        for engine, _ in requested:
            if engine not in PACKAGES:
                raise LayoutError(f"--engine {engine}: its facts are not read from a wheel by this command")
        return _run(args, requested, start)
    except DFlashCompatError as e:
        print(f"facts refresh: {e}", file=sys.stderr)
        return 2
    except (LayoutError, OSError) as e:
        print(f"facts refresh: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, requested: list[tuple[str, Optional[str]]], start: float) -> int:
    cache = args.cache or default_cache()
    opened: dict[tuple[str, str], Path] = {}

    def open_tree(engine: str, version: str) -> SourceTree:
        path = opened.get((engine, version)) or locate(engine, args.wheels, cache, version)
        return SourceTree.open(path)

    # the newest on the index: download first, to learn the version
    resolved: list[tuple[str, str]] = []
    for engine, version in requested:
        if version is None:
            path = locate(engine, None, cache, None)
            version = wheel_version(path)
            opened[(engine, version)] = path
        resolved.append((engine, version))

    store: Path = args.output
    known = json.loads((store / "anchors.json").read_text(encoding="utf-8")).get("anchors", {}) \
        if (store / "anchors.json").exists() else {}
    typed = {e: TYPED_AGAINST[e] if TYPED_AGAINST.get(e) in v else sorted(v, key=ENGINES[e].key)[-1]
             for e, v in _window(store).items()}
    for spec in args.typed_against:
        name, version = parse_spec(spec, "--typed-against")
        typed[name] = version

    if resolved and not args.bundle:  # facts on demand, into the user's cache
        window = {}
        for engine, version in resolved:
            window.setdefault(engine, []).append(version)
        data, _ = extract_window(window, open_tree, known, {}, _say, anchors_only=True)
        for engine, per in data.items():
            for version, (facts, sources, cites) in per.items():
                folder = cache_dir() / engine / version
                folder.mkdir(parents=True, exist_ok=True)
                write_atomically(folder / "sources.json", render({"sources": sources, "cites": cites}))
                write_atomically(folder / "facts.json", render(facts))
                _print_unknown(engine, version, facts)
                print(f"wrote {folder} ({SECTION[engine]} facts of {engine} {version}; "
                      f"{time.perf_counter() - start:.1f} s)", file=sys.stderr)
        return 0

    window = _window(store)
    for engine, version in resolved:
        if version not in window.setdefault(engine, []):
            window[engine].append(version)
    data, anchors = extract_window(window, open_tree, known, typed, _say)
    unknown = sum(_print_unknown(e, v, per[v][0]) for e, per in data.items() for v in per)
    files = store_files(data, anchors, build_common(data))
    took = time.perf_counter() - start
    if args.check:
        stale = [name for name, blob in files.items()
                 if not (store / name).exists() or (store / name).read_bytes() != blob]
        extra = sorted(p.name for p in store.glob("*") if p.is_file() and p.name not in files)
        if stale or extra or unknown:
            if stale or extra:
                print(f"facts refresh: {', '.join(stale + extra)} differ from the engines' code; run "
                      "`python -m dflash_compat.enginefacts refresh`", file=sys.stderr)
            if unknown:
                print(f"facts refresh: {unknown} facts unknown at a bundled release (above): an engine's layout "
                      "changed; teach its reader the new layout", file=sys.stderr)
            return 1
        print(f"{store} is up to date ({_window_line(data)}; {took:.1f} s)", file=sys.stderr)
        return 0
    store.mkdir(parents=True, exist_ok=True)
    for name, blob in files.items():
        _write_bytes(store / name, blob)
    print(f"wrote {store} ({_window_line(data)}; {took:.1f} s)", file=sys.stderr)
    return 0


def _window(store: Path) -> dict[str, list[str]]:
    """The releases the store bundles (its index.json; the package's own window when it has none)."""
    index = store / "index.json"
    if index.exists():
        listed = json.loads(index.read_text(encoding="utf-8")).get("engines", {})
        return {e: list(v.get("versions", [])) for e, v in listed.items() if e in PACKAGES and v.get("versions")}
    return {e: list(bundled_versions(e)) for e in PACKAGES if bundled_versions(e)}


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _print_unknown(engine: str, version: str, facts: dict) -> int:
    unknown = facts.get("unknown", {})
    for key, why in unknown.items():
        print(f"unknown: {engine} {version} {key}: {why}", file=sys.stderr)
    return len(unknown)


def _window_line(data: dict) -> str:
    return "; ".join(f"{e} {', '.join(sorted(per, key=ENGINES[e].key))}" for e, per in data.items())


def _write_bytes(path: Path, blob: bytes) -> None:
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(blob)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
