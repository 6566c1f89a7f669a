"""Run dflash-check on a fuzz case (in this process, or as a real process) and judge it by the contract.

The contract for every input: exit 0 or 1 with a report (strict JSON when --format json), or exit 2
with exactly one line on stderr; never a traceback, never a hang, and the input folders are
byte-identical afterwards. In-process runs go through `dflash_compat.cli.app.main` (the console script's
own error handling) with click's stream isolation; a SIGALRM timer turns a hang into a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from .cases import ROOT, Case, materialize

__all__ = ["Outcome", "Hang", "run_case", "violation", "fuzz_env", "snapshot", "warm_up"]


class Hang(BaseException):
    """Raised by the timer inside a run that took too long (a BaseException: no `except Exception` eats it)."""


@dataclass
class Outcome:
    case: Case
    code: Optional[int]  # None: it raised instead of exiting
    stdout: str
    stderr: str
    error: Optional[BaseException]
    where: str  # the innermost frame of our code (or the last frame) for an exception
    seconds: float
    changed: list[str]  # input files changed or removed, files added in a model folder
    written: tuple[str, ...] = ()  # files added elsewhere: a report written to a file


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under root (lstat: a FIFO or device is never opened)."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() \
                else "special"
    return out


@contextlib.contextmanager
def fuzz_env(hf_home: Path) -> Iterator[None]:
    """Offline, with an empty Hub cache, no token, 100 columns: no case can reach the network or the user's files."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(("HF_", "DFLASH_CHECK_", "COLUMNS"))}
    for key in saved:
        del os.environ[key]
    os.environ.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", COLUMNS="100")
    try:
        from huggingface_hub import constants

        offline, constants.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE, True  # read once at import
    except ImportError:  # pragma: no cover - a core dependency
        constants, offline = None, None
    try:
        yield
    finally:
        for key in ("HF_HOME", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "COLUMNS"):
            os.environ.pop(key, None)
        os.environ.update(saved)
        if constants is not None:
            constants.HF_HUB_OFFLINE = offline


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if str(ROOT) in f.filename and "/tests/" not in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    name = frame.filename.replace(str(ROOT) + "/", "")
    return f"{name}:{frame.lineno} ({frame.name})"


def _alarm(_signum, _frame):
    raise Hang("no answer within the time limit")


def _in_process(argv: list[str], limit: float) -> tuple[Optional[int], str, str, Optional[BaseException]]:
    from click.testing import CliRunner

    from dflash_compat.cli.app import main

    code, error = None, None
    old_argv, old_handler = sys.argv, signal.signal(signal.SIGALRM, _alarm)
    with CliRunner().isolation() as (out, err, _):
        sys.argv = ["dflash-check", *argv]
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else -1)
        except BaseException as exc:  # noqa: BLE001 - every escape is what the fuzzer looks for
            error = exc
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
            sys.argv = old_argv
        sys.stdout.flush()
        sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return code, stdout, stderr, error


def _subprocess(argv: list[str], cwd: Path, limit: float) -> tuple[Optional[int], str, str, Optional[BaseException]]:
    import subprocess

    try:
        proc = subprocess.run([sys.executable, "-m", "dflash_compat", *argv], cwd=cwd, capture_output=True,
                              text=True, errors="replace", timeout=limit, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return None, "", "", Hang(f"killed after {exc.timeout} s")
    return proc.returncode, proc.stdout, proc.stderr, None


def run_case(case: Case, limit: float = 20.0, subprocess: bool = False, workdir: Optional[Path] = None) -> Outcome:
    """Materialize `case` in a fresh folder, run dflash-check there (cwd: the case's root), and compare
    the input files before and after."""
    with tempfile.TemporaryDirectory(prefix="dflash-fuzz-", dir=workdir or _scratch()) as tmp:
        root = materialize(case, Path(tmp) / "case")
        (root / "out").mkdir()
        before = snapshot(root)
        start = time.monotonic()
        with fuzz_env(Path(tmp) / "hf-home"):
            if subprocess:
                code, stdout, stderr, error = _subprocess(case.argv(), root, limit)
            else:
                cwd = os.getcwd()
                os.chdir(root)
                try:
                    code, stdout, stderr, error = _in_process(case.argv(), limit)
                finally:
                    os.chdir(cwd)
        seconds = time.monotonic() - start
        after = snapshot(root)
        changed = _changed(before, after)
        written = tuple(sorted(k for k in after.keys() - before.keys() if k not in changed))
    where = _where(error) if error is not None else ""
    return Outcome(case, code, stdout, stderr, error, where, seconds, changed, written)


def _changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Input files changed or removed, and files added inside a model folder. A new file elsewhere is a
    report the case asked for (`--output`, or `output` in a settings file)."""
    gone_or_changed = [k for k in before if after.get(k) != before[k]]
    added = [k for k in after.keys() - before.keys() if k.startswith(("target/", "draft/"))]
    return sorted(gone_or_changed + added)


def _scratch() -> Optional[str]:
    """Where case folders go: FUZZ_TMP, else a RAM disk when there is one (a case writes and removes a few
    folders; on a busy disk that cost more than the check itself), else the system's temp folder."""
    chosen = os.environ.get("FUZZ_TMP")
    if chosen:
        return chosen
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def warm_up() -> None:
    """Import the frameworks and run one deep check of the tiny pair with each, unjudged: the first deep
    build imports a lot lazily (transformers model classes, sympy through torch), which on a busy
    machine can take longer than a case's time limit. A framework that is not installed is skipped."""
    from .cases import TINY

    for framework in ("torch", "mlx"):
        try:
            __import__("torch" if framework == "torch" else "mlx_lm")
        except ImportError:
            continue
        run_case(Case(TINY, args=("--framework", framework)), limit=600)


def _reject_constant(name: str):
    raise ValueError(f"not strict JSON: {name}")


def _wrote_report(out: Outcome) -> bool:
    return bool(out.written) or "--output" in out.case.args or "-o" in out.case.args


def violation(out: Outcome) -> Optional[str]:
    """None when the run kept the contract, else its failure signature (kind, exception type, location)."""
    if out.error is not None:
        kind = "hang" if isinstance(out.error, Hang) else "traceback"
        return f"{kind}: {type(out.error).__name__} at {out.where}"
    if out.changed:
        return f"input changed: {out.changed[0]}"
    if "Traceback (most recent call last)" in out.stderr:
        last = [ln for ln in out.stderr.splitlines() if ln.strip()][-1]
        return f"traceback printed: {last[:80]}"
    if out.code == 2:
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith("dflash-check: "):
            return f"exit 2 without one error line ({len(lines)} lines)"
        return None
    if out.code == 3:  # EXIT_INTERNAL: our own crash, one line naming the exception
        line = (out.stderr.strip().splitlines() or ["?"])[-1]
        return f"internal error: {line.split(': ', 2)[-1].split(';')[0][:100]}"
    if out.code not in (0, 1):
        return f"exit code {out.code}"
    if not out.stdout.strip() and not _wrote_report(out):
        return f"exit {out.code} without a report"
    if _format(out.case) == "json" and not _wrote_report(out) and out.case.command == "check":
        try:
            json.loads(out.stdout, parse_constant=_reject_constant)
        except ValueError as exc:
            return f"--format json not strict JSON: {str(exc)[:60]}"
    return None


def _format(case: Case) -> str:
    """The --format the command line asks for (the last one wins, as in click)."""
    fmt = "text"
    for flag, value in zip(case.args, case.args[1:]):
        if flag in ("--format", "-f"):
            fmt = value
    return fmt
