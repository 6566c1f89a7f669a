"""Whether a released package contains DFlash, read from the package itself: every file of a wheel or a source
distribution (text files line by line, compiled libraries by their embedded strings) searched for the DFlash terms.
The evidence of presence or absence docs/engine-facts.md records per release (TensorRT-LLM, ik_llama.cpp,
llama-cpp-python), and the probe that picks up a release that adds DFlash.

  python -m dflash_compat.enginefacts.evidence PACKAGE_FILE ...   one line per package, then its hits
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

__all__ = ["TERMS", "Evidence", "scan", "main"]

TERMS = ("dflash",)  # case-insensitive: DFlash, DFLASH, LLM_ARCH_DFLASH, qwen3_dflash, draft-dflash
MAX_MEMBER = 1024 * 1024 * 1024  # larger members are listed as not searched (a bound, never a hang)
_LIB = (".so", ".dylib", ".dll", ".pyd", ".a")


@dataclass
class Evidence:
    package: str
    files: int = 0  # files searched
    hits: dict[str, int] = field(default_factory=dict)  # file -> matching lines (or strings)
    skipped: list[str] = field(default_factory=list)  # files too large to search

    @property
    def has_dflash(self) -> bool:
        return bool(self.hits)

    def line(self) -> str:
        verdict = f"DFlash in {len(self.hits)} files" if self.hits else "no DFlash"
        extra = f", {len(self.skipped)} not searched (too large)" if self.skipped else ""
        return f"{self.package}: {verdict} ({self.files} files searched for {', '.join(TERMS)}{extra})"


def _members(path: Path) -> Iterator[tuple[str, bytes]]:
    if path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path, "r:gz") as tar:
            for m in tar:
                if m.isfile():
                    data = tar.extractfile(m)
                    yield m.name, (data.read(MAX_MEMBER + 1) if data else b"")
    else:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.is_dir():
                    with z.open(info) as f:
                        yield info.filename, f.read(MAX_MEMBER + 1)


def scan(path: Path) -> Evidence:
    """Every member of the wheel / sdist searched, case-insensitively, for TERMS."""
    pattern = re.compile("|".join(map(re.escape, TERMS)).encode(), re.IGNORECASE)
    ev = Evidence(path.name)
    for name, data in _members(path):
        if len(data) > MAX_MEMBER:
            ev.skipped.append(name)
            continue
        ev.files += 1
        if name.endswith(_LIB) or b"\0" in data[:8192]:  # a binary: its printable strings
            n = sum(1 for s in re.findall(rb"[\x20-\x7e]{4,}", data) if pattern.search(s))
        else:
            n = sum(1 for line in data.splitlines() if pattern.search(line))
        if n:
            ev.hits[name] = n
    return ev


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for arg in argv:
        path = Path(arg)
        if not path.is_file():
            print(f"evidence: {arg}: no such file", file=sys.stderr)
            return 2
        try:
            ev = scan(path)
        except (tarfile.TarError, zipfile.BadZipFile, OSError) as e:
            print(f"evidence: {arg}: not a readable wheel or source distribution ({e})", file=sys.stderr)
            return 2
        print(ev.line())
        for name, n in sorted(ev.hits.items()):
            print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
