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


@pytest.mark.parametrize("allocator", ["numpy", "paddle", "torch"])
def test_a_config_that_allocates_past_the_hard_limit_is_a_crash_and_the_host_survives(allocator):
    budget = 64 << 20
    over = f'paddle.testonly.allocate_{allocator}(x=Tensor([3],"float32"), mib=4096, )'  # 4 GiB from 12 bytes
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
        results = {r.key: r for r in pool.run([("over", over)])}
        after = {r.key: r for r in pool.run([("pass", PASSING[1])])}
    crash = results["over"]
    assert crash.status == "crash" and crash.attempts == 1, crash.verdict
    assert "out of memory under the worker's address-space limit" in crash.verdict["message"]
    assert crash.verdict["signal"] == "MemoryError"
    # The worker that ran out was replaced; the next config runs (and passes) in a fresh one.
    assert after["pass"].status == "pass" and after["pass"].worker_pid != info["pid"]
    assert _rss_of_this_process() - host_rss < 256 << 20  # the 4 GiB never reached this process


def test_normal_configs_pass_under_the_default_limit():
    with WorkerPool(1, env={"APITESTER_EXTRA_SPECS": EXTRA_SPECS}) as pool:
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
        pool.startup_timeout = 20.0  # from here on: the retry's worker gets 20 s to become ready
        started = time.monotonic()
        results = list(pool.run([("k", 'paddle.testonly.crash_then_hang_on_start(x=Tensor([3],"float32"), )')]))
        elapsed = time.monotonic() - started
    assert marker.exists()
    assert len(results) == 1
    verdict = results[0].verdict
    assert results[0].status == "crash" and verdict["signal"] == "SIGSEGV", verdict
    assert "did not become ready within 20 s, so no retry ran" in verdict["message"]
    assert 20 <= elapsed < 120
