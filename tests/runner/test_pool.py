"""apitester.pool on its own (no Django): thread split, exits that aren't signals, streaming order,
the hard address-space limit and the start-up timeout (real worker processes throughout)."""
import os
import time

import pytest

from apitester.pool import ADDRESS_SPACE_SLACK, HARD_LIMIT_FACTOR, TimeBudget, WorkerPool, estimate_bytes

from .conftest import EXTRA_SPECS, FAILING_FORWARD, PASSING


def test_workers_split_the_cores_and_an_exit_is_a_crash():
    jobs = [("exit", 'paddle.testonly.exit(x=Tensor([3],"float32"), )'), ("pass", PASSING[0]),
            ("fail", FAILING_FORWARD)]
    with WorkerPool(2, time_budget=TimeBudget(base=30), env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
        info = pool.wait_ready()
        assert info["threads"] == max(1, (os.cpu_count() or 1) // 2)
        # The worker reports its own build's CUDA support: False on a CPU build, True on the GPU host.
        import paddle

        assert info["cuda"] is bool(paddle.is_compiled_with_cuda()) and info["paddle_version"] == paddle.__version__
        results = {r.key: r for r in pool.run(jobs)}
    assert results["exit"].status == "crash" and results["exit"].attempts == 2
    assert "exited with code 3 twice" in results["exit"].verdict["message"]
    assert results["pass"].status == "pass" and results["pass"].seconds > 0
    assert results["fail"].status == "accuracy_error" and results["fail"].verdict["direction"] == "forward"


def test_memory_estimate_scales_with_the_tensors():
    small = estimate_bytes('paddle.clip(x=Tensor([10],"float32"), )')
    big = estimate_bytes('paddle.clip(x=Tensor([1000, 10],"float64"), )')
    assert big == small * 1000 * 2
    assert estimate_bytes("not a config") == 0


def _limits_of(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as fh:
        for line in fh:
            if line.startswith("Max address space"):
                return int(line.split()[3])
    raise AssertionError("no address-space limit line")


def _rss_of_this_process() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))


def test_a_config_that_allocates_past_the_hard_limit_is_a_crash_and_the_host_survives():
    """numpy, paddle and torch each allocate 4 GiB from 12 bytes, one after the other in one pool (one test, not
    three: a pool's start imports paddle and torch); each runs in a fresh worker, its predecessor replaced."""
    budget = 64 << 20
    host_rss = _rss_of_this_process()
    with WorkerPool(1, memory_budget=budget, time_budget=TimeBudget(base=60),
                    env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
        info = pool.wait_ready()
        # The limit is the worker's size after importing paddle and torch, plus the slack, plus 3x the budget,
        # and the kernel enforces it on the worker process.
        assert pool.address_space_allowance == ADDRESS_SPACE_SLACK + HARD_LIMIT_FACTOR * budget
        assert info["address_space_limit"] == info["address_space_baseline"] + pool.address_space_allowance
        assert _limits_of(info["pid"]) == info["address_space_limit"]
        assert 0.5 * 2**30 < info["address_space_baseline"] < 4 * 2**30
        crashes = {}
        for allocator in ("numpy", "paddle", "torch"):
            over = f'paddle.testonly.allocate_{allocator}(x=Tensor([3],"float32"), mib=4096, )'
            [crashes[allocator]] = list(pool.run([(allocator, over)]))  # one result each
        after = {r.key: r for r in pool.run([("pass", PASSING[1])])}
    for allocator, crash in crashes.items():
        assert crash.key == allocator and crash.status == "crash" and crash.attempts == 1, (allocator, crash.verdict)
        assert "out of memory under the worker's address-space limit" in crash.verdict["message"], allocator
        assert crash.verdict["signal"] == "MemoryError", allocator
    # The worker that ran out was replaced each time; the next config runs (and passes) in a fresh one.
    pids = [crash.worker_pid for crash in crashes.values()]
    assert pids[0] == info["pid"] and len(set(pids)) == 3, pids
    assert after["pass"].status == "pass" and after["pass"].worker_pid not in pids
    assert _rss_of_this_process() - host_rss < 256 << 20  # the 4 GiB never reached this process


@pytest.fixture(scope="module")
def default_pool():
    """One worker under the default limits, shared by the tests that only run passing configs on it."""
    with WorkerPool(1, env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
        yield pool


def test_normal_configs_pass_under_the_default_limit(default_pool):
    pool = default_pool
    info = pool.wait_ready()
    assert info["address_space_limit"] == info["address_space_baseline"] + pool.address_space_allowance
    assert pool.address_space_allowance > ADDRESS_SPACE_SLACK + pool.memory_budget
    results = {r.key: r.status for r in pool.run([(c, c) for c in PASSING])}
    assert set(results.values()) == {"pass"}, results


def test_a_retry_whose_fresh_worker_hangs_while_importing_is_timed_out(tmp_path):
    marker = tmp_path / "hang"
    env = {"APITESTER_EXTRA_SPECS": f"{EXTRA_SPECS},tests.runner.hang_on_import_specs",
           "APITESTER_TEST_HANG_MARKER": str(marker)}
    with WorkerPool(1, time_budget=TimeBudget(base=60), env=env) as pool:
        pool.wait_ready()  # the first worker starts normally (no marker yet)
        pool.startup_timeout = 8.0  # from here on: the retry's worker gets 8 s to become ready
        started = time.monotonic()
        results = list(pool.run([("k", 'paddle.testonly.crash_then_hang_on_start(x=Tensor([3],"float32"), )')]))
        elapsed = time.monotonic() - started
    assert marker.exists()
    assert len(results) == 1
    verdict = results[0].verdict
    assert results[0].status == "crash" and verdict["signal"] == "SIGSEGV", verdict
    assert "did not become ready within 8 s, so no retry ran" in verdict["message"]
    assert 8 <= elapsed < 120


# ---- warm pools: a release matrix's lanes skip the workers' start


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_warm_pool_is_reused_by_the_next_block_with_the_same_options_and_closed_past_the_limit():
    from apitester.pool import close_idle_pools, idle_pools, warm_pool

    close_idle_pools()
    env = {"APITESTER_EXTRA_SPECS": EXTRA_SPECS}
    try:
        with warm_pool(1, 2, env=env) as pool:
            first = {r.key: r for r in pool.run([("a", PASSING[0]), ("b", PASSING[1])])}
            pids = {w.proc.pid for w in pool._workers}
        assert idle_pools() == 1 and all(_alive(pid) for pid in pids)
        with warm_pool(1, 2, env=env) as again:
            assert again is pool and {w.proc.pid for w in again._workers} == pids  # no new start
            second = {r.key: r for r in again.run([("a", PASSING[0]), ("b", PASSING[1])])}
        timing = ("seconds", "framework_seconds", "readings_seconds", "phases")
        assert ({k: {f: v for f, v in r.verdict.items() if f not in timing} for k, r in first.items()}
                == {k: {f: v for f, v in r.verdict.items() if f not in timing} for k, r in second.items()})
        # other options (another seed: another pool) past keep=1: the least recently used one is closed
        with warm_pool(1, 2, env=env, seed=1) as other:
            assert other is not pool
            assert other.wait_ready()
        assert idle_pools() == 1
        deadline = time.monotonic() + 15
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids)
    finally:
        close_idle_pools()
    assert idle_pools() == 0


def test_a_warm_pool_left_by_an_exception_is_closed_and_a_dead_idle_worker_is_replaced():
    from apitester.pool import close_idle_pools, idle_pools, warm_pool

    close_idle_pools()
    env = {"APITESTER_EXTRA_SPECS": EXTRA_SPECS}
    try:
        with pytest.raises(RuntimeError):
            with warm_pool(2, 1, env=env) as pool:
                pool.wait_ready()
                broken = pool._workers[0].proc
                raise RuntimeError("the run stopped")
        assert idle_pools() == 0 and broken.poll() is not None
        with warm_pool(2, 1, env=env) as pool:
            pool.wait_ready()
            victim = pool._workers[0].proc
        victim.kill()  # dies while idle
        victim.wait()
        with warm_pool(2, 1, env=env) as same:
            assert same is pool
            results = list(same.run([("a", PASSING[0])]))
        assert [r.status for r in results] == ["pass"] and results[0].attempts == 1
        assert same._workers[0].proc.pid != victim.pid
    finally:
        close_idle_pools()


def test_more_feeds_batches_until_an_empty_one_and_a_batch_of_only_too_large_configs_does_not_end_it():
    huge = 'paddle.clip(x=Tensor([4096, 4096],"float64"), )'  # 128 MiB of input: over the 64 MiB budget below
    batches = [[("huge", huge)], [("b", PASSING[1])], []]
    asked = []

    def more():
        asked.append(len(batches))
        return batches.pop(0) if batches else []

    with WorkerPool(2, memory_budget=64 << 20, env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
        results = {r.key: r for r in pool.run([("a", PASSING[0])], more=more)}
    assert set(results) == {"a", "huge", "b"}
    assert results["huge"].status == "skipped_too_large" and results["a"].status == results["b"].status == "pass"
    assert asked == [3, 2, 1]  # asked once more after the too-large batch, never after the empty one


def test_a_freed_worker_has_its_next_job_before_the_caller_sees_the_result(default_pool):
    """The caller handles each result (the runner's database write) before it resumes the pool: the worker that
    finished must already be running the next job (from ``pending`` or from ``more()``) by then, or it idles for
    every write."""
    batches = [[("c", PASSING[0])], []]
    pool = default_pool
    seen = []
    for result in pool.run([("a", PASSING[0]), ("b", PASSING[1])], more=lambda: batches.pop(0)):
        seen.append((result.key, pool.busy))
    # a and b were pending (sent largest first), c came from more() once both were sent; the worker is free
    # only after the last
    assert sorted(key for key, _ in seen[:2]) == ["a", "b"] and seen[2][0] == "c"
    assert [busy for _, busy in seen] == [True, True, False]
