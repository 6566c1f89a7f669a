"""Test-session settings that must exist before torch is imported.

The tests run tiny models (hidden sizes of 32-64): each op is microseconds of work, and a second
intra-op thread only adds synchronisation. On a shared 2-core machine that overhead dominated: the
tiny-pair smoke took 83 s with torch's default 2 threads and 16 s with one. A value already set in
the environment wins.
"""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
