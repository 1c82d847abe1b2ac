"""A test-only thread-sensitive kernel (issue #46; `import tests.fake_specs.threads`, or
APITESTER_EXTRA_SPECS=tests.fake_specs.threads): a float32 sum whose order depends on the thread count it reads, as
a parallel reduction's does. Paddle's side sums one chunk per thread Torch is pinned to (apitester.provenance pins
both frameworks to the same count) and adds the partial sums; Torch's side is the one-chunk order. At one thread the
two orders are the same (exact); at two, float32 rounding makes them differ by an ulp or so (within tolerance)."""
import numpy as np

from apitester.specs.base import Spec, register


def chunked_sum(values: np.ndarray, chunks: int) -> np.float32:
    """Sum float32 values in ``chunks`` consecutive parts (each left to right), then the partial sums in order."""
    flat = np.asarray(values, dtype=np.float32).ravel()
    total = np.float32(0)
    for part in np.array_split(flat, max(1, chunks)):
        partial = np.float32(0)
        for value in part:
            partial = np.float32(partial + value)
        total = np.float32(total + partial)
    return total


def _paddle_threaded_sum(x):
    import paddle
    import torch

    return paddle.to_tensor(np.array([chunked_sum(x.numpy(), torch.get_num_threads())], dtype=np.float32))


def _torch_sum_one_order(x, **_):
    import torch

    return torch.from_numpy(np.array([chunked_sum(x.numpy(), 1)], dtype=np.float32))


register(Spec(api="apitester_test.threaded_sum", paddle=_paddle_threaded_sum, torch=_torch_sum_one_order,
              signature=lambda x: None, backward=False))
