"""Big inputs reach Paddle through DLPack (trial.paddle_tensor): the numpy memory is shared as torch's
from_numpy shares it, unless the API writes into an argument (in-place, out=/output=), where one buffer would make
the two sides' outputs the same memory and every comparison agree."""

import numpy as np
import pytest

import tests.fake_specs.engine  # noqa: F401  (registers the apitester_test.* specs)

from apitester.engine import trial
from apitester.engine.execute import run_config
from apitester.engine.trial import SHARED_INPUT_ELEMENTS, frameworks, paddle_tensor as _paddle_tensor

BIG = SHARED_INPUT_ELEMENTS + 3


def test_a_big_input_is_shared_and_a_small_one_copied():
    paddle, _ = frameworks()
    big = np.linspace(-1, 1, BIG, dtype=np.float32)
    small = np.linspace(-1, 1, 100, dtype=np.float32)
    shared, copied, unshared = _paddle_tensor(big, True), _paddle_tensor(small, True), _paddle_tensor(big.copy(), False)
    big[0], small[0] = 5.0, 5.0
    assert float(shared[0]) == 5.0  # Paddle reads the array's own memory
    assert float(copied[0]) == -1.0 and float(unshared[0]) == -1.0
    strided = np.linspace(-1, 1, 2 * BIG, dtype=np.float32)[::2]  # not contiguous: copied
    assert np.array_equal(_paddle_tensor(strided, True).numpy(), strided)
    for dtype in ("float16", "float64", "int64", "bool", "complex64", "int8"):
        array = (np.arange(BIG) % 5).astype(dtype)
        tensor = _paddle_tensor(array, True)
        assert np.array_equal(tensor.numpy(), array) and tensor.shape == [BIG], dtype


@pytest.mark.parametrize("config", [
    f'apitester_test.scale_wrong_(Tensor([{BIG}],"float32"), )',
    f'apitester_test.assign_wrong(Tensor([{BIG}],"float32"), output=Tensor([{BIG}],"float32"), )',
])
def test_an_api_writing_into_an_argument_keeps_separate_buffers(config):
    # Paddle writes 3x (2x) where Torch writes 2x (x): one shared buffer would hold both and read as agreement.
    v = run_config(config)
    assert v.status == "accuracy_error", v.message


@pytest.mark.parametrize("config", [
    'paddle.sum(Tensor([4, 70000],"float16"), axis=1, )',
    'paddle.minimum(Tensor([4, 1, 2],"float32"), Tensor([40000, 2],"float32"), )',
    'paddle.nn.functional.embedding(Tensor([4, 5],"int64"), weight=Tensor([700, 128],"float32"), padding_idx=0, '
    'max_norm=None, norm_type=2.0, sparse=False, scale_grad_by_freq=False, name=None, )',
    'paddle.Tensor.topk(Tensor([80000],"float32"), 100, )',
    'paddle.cumsum(Tensor([3, 70000],"bfloat16"), axis=1, )',
])
def test_shared_inputs_give_the_verdict_copies_give(config, monkeypatch):
    shared = run_config(config)
    monkeypatch.setattr(trial, "SHARED_INPUT_ELEMENTS", 1 << 62)  # every input copied, as before
    copied = run_config(config)
    fields = ("status", "direction", "output", "max_abs", "max_rel", "mismatched", "draws", "message")
    assert {f: getattr(shared, f) for f in fields} == {f: getattr(copied, f) for f in fields}
    assert shared.status != "unsupported", shared.message
