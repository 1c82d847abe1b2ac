"""The worker memory budget is derived from the host's memory and the worker count (no fixed 2 GiB), stated in
the verdicts it causes, and a config that fits the derived budget is run, not skipped."""
import pytest

from apitester.pool import (MEMORY_SHARE, SKIPPED_TOO_LARGE, WorkerPool, _available_memory, default_memory_budget,
                            estimate_bytes)
from tests.engine_helpers.report_configs import configs

GiB = 2**30


def mem_total() -> int:
    with open("/proc/meminfo") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemTotal:"))


def test_the_budget_is_a_share_of_the_available_memory_per_worker():
    # The host: 24 GiB, 19.5 GiB available, two workers: 5.85 GiB each, not 2.
    assert default_memory_budget(2, available=int(19.5 * GiB)) == int(19.5 * GiB * 0.6 / 2)
    assert default_memory_budget(1, available=int(19.5 * GiB)) == 2 * default_memory_budget(2, available=int(19.5 * GiB))
    assert default_memory_budget(8, available=8 * GiB) == int(8 * GiB * MEMORY_SHARE / 8)
    assert default_memory_budget(0, available=GiB) == int(GiB * MEMORY_SHARE)  # at least one worker


def test_the_available_memory_is_the_hosts():
    assert 0 < _available_memory() <= mem_total()


def test_a_pool_derives_its_budget_from_this_host_and_states_it():
    pool = WorkerPool(2)  # not entered: no worker starts
    expected = _available_memory() * MEMORY_SHARE / 2
    assert abs(pool.memory_budget - expected) < 0.1 * expected
    assert "60% of the" in pool.memory_budget_origin and "shared by 2 workers" in pool.memory_budget_origin
    set_pool = WorkerPool(2, memory_budget=3 * GiB)
    assert set_pool.memory_budget == 3 * GiB and set_pool.memory_budget_origin == "3072 MiB per worker, as set"


def test_a_linear_config_over_2_gib_that_fits_the_derived_budget_is_run_not_skipped():
    pool = WorkerPool(2)
    assert pool.memory_budget > int(2.5 * GiB), f"this host has too little memory available: {pool.memory_budget_origin}"
    over_2_gib = [c for c in configs("paddle.nn.functional.linear") if 2 * GiB < estimate_bytes(c) <= 2.5 * GiB]
    assert over_2_gib, "the reports have linear configs estimated at 2.1-2.5 GiB"
    for config in over_2_gib:
        assert pool._too_large("k", config) is None, config  # dispatched to a worker, not skipped

    # The same config with a hundred times the rows is over any budget this host derives: skipped, saying why.
    too_large = over_2_gib[0].replace("Tensor([", "Tensor([100", 1)
    assert estimate_bytes(too_large) > pool.memory_budget
    skipped = pool._too_large("k", too_large)
    assert skipped.status == SKIPPED_TOO_LARGE
    assert pool.memory_budget_origin in skipped.verdict["message"]
