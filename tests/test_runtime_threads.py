"""torch's intra-op thread count for `smoke` on CPU: the user's choice wins, else few threads for
small models and never more than the free cores (runtime/threads.py)."""

from __future__ import annotations

from dflash_compat.runtime.threads import THREAD_PARAMS, choose_threads, free_cores, physical_cores


def test_the_users_choice_wins():
    assert choose_threads(10**12, 8, requested=3, env={}, load=0.0) == (3, "--threads")
    assert choose_threads(10**12, 8, env={"OMP_NUM_THREADS": "4"}, load=0.0) == (None, "OMP_NUM_THREADS")
    assert choose_threads(10**12, 8, env={"MKL_NUM_THREADS": "2"}, load=0.0).threads is None
    assert choose_threads(10**12, 8, env={"OMP_NUM_THREADS": " "}, load=0.0).why == "auto"  # blank: unset


def test_small_models_get_one_thread():
    assert choose_threads(10**5, 8, env={}, load=0.0).threads == 1  # the tiny example pair
    assert choose_threads(THREAD_PARAMS - 1, 8, env={}, load=0.0).threads == 1


def test_never_more_than_the_cores_nor_the_free_ones():
    cores = physical_cores()
    big = 10**12
    assert choose_threads(big, 64, env={}, load=0.0).threads == min(64, cores)
    assert choose_threads(big, 1, env={}, load=0.0).threads == 1  # what torch (or its user) was set to
    assert choose_threads(big, cores, env={}, load=float(cores)).threads == 1  # every core busy elsewhere
    assert free_cores(4, 1.4) == 3 and free_cores(4, 9.0) == 1 and free_cores(2, 0.0) == 2
