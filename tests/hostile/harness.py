"""Running dflash-check on a hostile case in a subprocess, and the contract every run must keep.

The contract (issue 15): the run ends within its budget; it exits 0 or 1 with a report on stdout, or 2
with exactly one line on stderr; it never prints a traceback; and every file under the case's folder
is byte-identical afterwards (nothing added, removed or changed; FIFOs and symlinks are compared as
what they are, never opened). A run that blocks (a FIFO regression) is killed with its whole process
group at the hard limit, so the suite itself never hangs.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["Result", "run_cli", "snapshot", "assert_contract", "clean_env"]


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def clean_env(extra: Mapping[str, str], hf_home: Path) -> dict[str, str]:
    """The parent's environment without any HF_* setting, offline unless the case names a (fake) Hub,
    with its own cache: a case never reaches the network or the user's cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "DFLASH_CHECK_"))}
    env.update({"HF_HOME": str(hf_home), "HF_HUB_DISABLE_TELEMETRY": "1", "COLUMNS": "100"})
    if "HF_ENDPOINT" not in extra:
        env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env


def run_cli(args: Sequence[str], cwd: Path, env: Mapping[str, str], limit: float) -> Result:
    """`python -m dflash_compat ARGS`, killed (with its children) after `limit` seconds."""
    argv = [sys.executable, "-m", "dflash_compat", *args]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    return Result(list(args), proc.returncode, out, err, time.monotonic() - start, timed_out)


def snapshot(root: Path) -> dict[str, str]:
    """path -> sha256 of a regular file's bytes, a symlink's target, or the kind of anything else.
    Uses lstat only: a FIFO or device is never opened."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = "link:" + os.readlink(path)
            elif stat.S_ISREG(mode):
                h = hashlib.sha256()
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
                out[rel] = h.hexdigest()
            else:
                out[rel] = "dir" if stat.S_ISDIR(mode) else f"mode:{stat.S_IFMT(mode)}"
    return out


def assert_contract(res: Result, budget: float, before: dict[str, str], after: dict[str, str]) -> None:
    shown = f"dflash-check {' '.join(res.argv)}\nexit {res.returncode} in {res.seconds:.1f} s\n" \
            f"stdout: {res.stdout[-2000:]}\nstderr: {res.stderr[-4000:]}"
    assert not res.timed_out, f"killed after {res.seconds:.1f} s (a hang?)\n{shown}"
    assert res.seconds < budget, f"took {res.seconds:.1f} s, budget {budget} s\n{shown}"
    assert "Traceback" not in res.stderr, shown
    if res.returncode == 2:
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("dflash-check: "), f"not one error line\n{shown}"
    else:
        assert res.returncode in (0, 1), shown
        assert res.stdout.strip() or res.stderr.startswith("wrote "), f"no report\n{shown}"
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"input files changed: {changed[:10]}\n{shown}"
