"""run_config paths with test-only specs: backward detection, same output-gradient, engine
errors, dtype mismatch, random APIs."""

import tests.fake_specs.engine  # noqa: F401  (registers the apitester_test.* specs)

from apitester.engine.execute import run_config


def test_correct_backward_passes_with_the_same_output_gradient():
    # Identical math on both sides: any difference would come from feeding different
    # output-gradients or inputs to the two frameworks.
    v = run_config('apitester_test.tanh(Tensor([16, 8],"float64"), )')
    assert v.status == "pass", v.message
    assert "grads of x" in v.message and "backward max abs diff" in v.message


def test_wrong_gradient_is_a_backward_accuracy_error():
    v = run_config('apitester_test.tanh_wrong_grad(Tensor([16, 8],"float32"), )')
    assert (v.status, v.direction, v.output) == ("accuracy_error", "backward", "grad x")
    assert v.mismatched > 0 and "backward, grad x" in v.message


def test_exception_inside_the_engine_is_flagged_engine_error():
    v = run_config('apitester_test.broken_domain(Tensor([3],"float32"), )')
    assert v.status == "unsupported" and v.engine_error
    assert "domain bug on purpose" in v.message


def test_dtype_mismatch_from_real_frameworks():
    v = run_config('apitester_test.dtype_differs(Tensor([3],"float32"), )')
    assert v.status == "dtype_mismatch" and "float32 (paddle) vs float64 (torch)" in v.message


def test_random_api_uses_statistical_check():
    v = run_config('apitester_test.rand(Tensor([50],"float32"), )')
    assert v.status == "pass" and v.statistical
    assert v.message.startswith("shape (50,)")


def test_bfloat16_inputs_reach_both_sides_identically():
    v = run_config('apitester_test.double(Tensor([64],"bfloat16"), )')
    assert v.status == "pass" and v.max_abs == 0.0, v.message


def test_missing_kernel_is_a_short_paddle_error():
    # Paddle's CPU build has no bfloat16 tanh kernel: an honest paddle_error, one line.
    v = run_config('apitester_test.tanh(Tensor([4],"bfloat16"), )')
    assert v.status == "paddle_error"
    assert v.message.startswith("RuntimeError: (NotFound) The kernel with key (CPU")
    assert "[Hint" not in v.message and "kernel_factory.cc" not in v.message


def test_inplace_api_is_compared_forward_only():
    # An in-place op cannot run on an autograd leaf in either framework.
    v = run_config('apitester_test.scale_(Tensor([4, 4],"float32"), )')
    assert v.status == "pass", v.message
    assert v.message == "forward agrees (backward not compared for this API)"


def test_dtype_object_outputs_compare_by_name():
    v = run_config('apitester_test.dtype_of(Tensor([2],"bfloat16"), )')
    assert v.status == "pass", v.message


def test_framework_seconds_count_the_calls_of_both_sides_and_not_the_engine():
    # Each draw sleeps 0.2 s in the Paddle call, 0.1 s in the Torch call and 0.3 s generating its input:
    # the clock must hold the first two for every draw and none of the third.
    v = run_config('apitester_test.slow_sides(Tensor([4],"float32"), )')
    assert v.status == "pass", v.message
    draws = len(v.draws)
    assert draws >= 2  # a small input: typical, edge and extra seeds
    assert 0.3 * draws <= v.framework_seconds < 0.3 * draws + 0.25 * draws
    assert v.seconds >= v.framework_seconds + 0.3 * draws  # the input generation is the engine's
    again = run_config('apitester_test.tanh(Tensor([4],"float64"), )')
    assert 0 < again.framework_seconds <= again.seconds  # reset per config, not carried over from the first


def test_paddle_outputs_are_read_without_a_copy_and_outlive_their_tensor():
    """_paddle_array reads a CPU tensor's memory through DLPack (no copy), value for value what Tensor.numpy()
    gives, for every dtype and layout a config produces; the array holds the allocation, so the tensor going away
    and Paddle allocating again changes nothing in it."""
    import gc

    import numpy as np

    from apitester.engine.trial import frameworks, paddle_array as _paddle_array

    paddle, _ = frameworks()
    base = paddle.to_tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5)
    cases = [base, base.astype("float16"), base.astype("float64"), base.astype("int64"), base > 0,
             base.astype("int8"), paddle.to_tensor(np.array(2.5, np.float32)), paddle.zeros([0, 3]),
             paddle.transpose(base, [2, 0, 1]), paddle.complex(base, -base)]
    for t in cases:
        arr = _paddle_array(t)
        expected = t.numpy()
        assert arr.dtype == expected.dtype and arr.shape == expected.shape
        assert np.array_equal(arr, expected), t.dtype
    big = paddle.exp(paddle.to_tensor(np.linspace(-1, 1, 1 << 20, dtype=np.float32)))
    arr = _paddle_array(big)
    assert not arr.flags.owndata  # Paddle's own memory: no copy was made
    expected = arr.copy()
    del big
    gc.collect()
    churn = [paddle.full([1 << 20], 123.0) for _ in range(8)]  # reuse freed memory if it had been freed
    assert np.array_equal(arr, expected) and len(churn) == 8


def test_an_expanded_torch_gradient_is_compared_as_one_contiguous_array():
    """paddle.sum's gradient on the Torch side is one value expanded with stride 0: _torch_out makes it whole with
    torch's copy (numpy's strided copy of it at every comparison cost more than the API), values unchanged."""
    import numpy as np

    from apitester.engine.trial import frameworks, torch_out as _torch_out

    _, torch = frameworks()
    expanded = torch.full((3, 1), 0.5, dtype=torch.float16).expand(3, 1000)
    out = _torch_out(expanded)
    assert out.array.flags.c_contiguous and out.array.shape == (3, 1000) and out.dtype == "float16"
    assert np.array_equal(out.array, np.full((3, 1000), 0.5, np.float16))
    v = run_config('paddle.sum(Tensor([4, 70000],"float16"), axis=1, )')
    assert v.status == "pass" and "grads of x" in v.message
