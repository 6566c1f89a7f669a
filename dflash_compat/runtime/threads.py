"""How many intra-op threads torch gets for a CPU run: one for small models, never more than the free cores.

Batch-1 decoding of a small model issues thousands of tiny matmuls; with one OpenMP thread per
core, each of them waits at a barrier for threads the OS has given to other processes. On a busy
2-core machine that made the tiny example pair 10x slower with torch's default (2 threads) than
with one (benchmarks/bench_threads_torch.py; docs/runtime.md). So `dflash-check smoke` picks:
the user's choice when there is one (--threads, OMP_NUM_THREADS / MKL_NUM_THREADS), else
min(cores torch would use, cores not busy with other work, one per THREAD_PARAMS parameters).
The Python API never changes torch's thread count; torch.set_num_threads stays the caller's.
"""

from __future__ import annotations

import os
from typing import Mapping, NamedTuple, Optional

__all__ = ["THREAD_PARAMS", "THREAD_ENV_VARS", "ThreadChoice", "choose_threads", "free_cores", "physical_cores"]

# Parameters (target + draft) per intra-op thread. Below it one thread is fastest, even on an idle
# machine: measured on the example pair and a 10M-parameter pair (docs/runtime.md, "Threads").
THREAD_PARAMS = 50_000_000
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


class ThreadChoice(NamedTuple):
    threads: Optional[int]  # None: leave torch's setting alone
    why: str  # "--threads", "OMP_NUM_THREADS", "MKL_NUM_THREADS" or "auto"


def physical_cores() -> int:
    """Physical cores this process may run on (hyper-threads share a core's arithmetic units)."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        available = os.cpu_count() or 1
    pairs, package = set(), ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "physical id":
                    package = value.strip()
                elif key.strip() == "core id":
                    pairs.add((package, value.strip()))
    except OSError:
        pass
    return max(1, min(available, len(pairs) or available))


def free_cores(cores: int, load: Optional[float] = None) -> int:
    """Cores not busy with other processes: `cores` minus the 1-minute load average (at least 1).
    The load average lags by about a minute, so this run's own model loading barely counts."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not available on this platform
            load = 0.0
    return max(1, cores - int(round(load)))


def choose_threads(num_params: int, torch_threads: int, *, requested: Optional[int] = None,
                   env: Optional[Mapping[str, str]] = None, load: Optional[float] = None) -> ThreadChoice:
    """The intra-op thread count for a CPU run of a model pair with `num_params` parameters.
    `torch_threads`: what torch would use now (its default is the physical core count, or what the
    user set). A user's choice always wins: `requested` (--threads), or OMP_NUM_THREADS /
    MKL_NUM_THREADS in `env` (then torch already honours it: None, leave it alone)."""
    env = os.environ if env is None else env
    if requested is not None:
        return ThreadChoice(requested, "--threads")
    for var in THREAD_ENV_VARS:
        if env.get(var, "").strip():
            return ThreadChoice(None, var)
    cores = max(1, min(torch_threads, physical_cores()))
    by_size = max(1, num_params // THREAD_PARAMS)
    return ThreadChoice(min(cores, free_cores(cores, load), by_size), "auto")
