"""apitester.pool on its own (no Django): thread split, exits that aren't signals, streaming order."""
import os

from apitester.pool import TimeBudget, WorkerPool, estimate_bytes

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
