"""Test-only specs for the exact rule's readings (issue #35): a kernel whose result changes from one call to the
next on identical inputs, on either side, and a deterministic one that is one rounding step off
(`import tests.fake_specs.exact`, or APITESTER_EXTRA_SPECS=tests.fake_specs.exact)."""
import os

import numpy as np

from apitester.specs.base import Spec, register


def _noise(shape) -> np.ndarray:
    # fresh entropy on every call: the same inputs never give the same bits twice
    return np.random.default_rng(int.from_bytes(os.urandom(8), "little")).uniform(1e-4, 2e-4, shape)


def _noisy_paddle(x):
    import paddle

    return x + paddle.to_tensor(_noise(x.shape).astype("float32"))


def _noisy_torch(x, **_):
    import torch

    return x + torch.from_numpy(_noise(tuple(x.shape)).astype("float32"))


def _nudged_paddle(x):
    import paddle

    return x * paddle.to_tensor(np.float32(1.0001))  # deterministic, a few float32 ulps off x


_stub = lambda x: None  # noqa: E731  (one tensor x)

register(
    Spec(api="apitester_test.noisy_paddle", paddle=_noisy_paddle, torch=lambda x, **_: x, signature=_stub,
         backward=False),
    Spec(api="apitester_test.noisy_torch", paddle=lambda x: x * 1, torch=_noisy_torch, signature=_stub,
         backward=False),
    Spec(api="apitester_test.nudged", paddle=_nudged_paddle, torch=lambda x, **_: x, signature=_stub,
         backward=False),
)


# Issue #44 (class 3): "who is closer" reads the outputs that made a config inexact, on every inexact draw.

def _zero_grad_paddle(x):
    return x * 0  # 0 everywhere, and so is its gradient: exactly 0 is the truth


def _zero_grad_torch(x, **_):
    import torch

    # the same zeros forward (x - x.detach() is 0), but a gradient of eps(dtype) * g below float64: Torch off an
    # exact 0 by ~1e-7 at float32, exact at float64 (the oracle's pair agrees on 0)
    eps = 0.0 if x.dtype == torch.float64 else float(torch.finfo(x.dtype).eps)
    return x * 0 + (x - x.detach()) * eps


def _disputed_grad_torch(x, **_):
    # off an exact 0 at every dtype, float64 included: the float64 pair disagrees (0 against 1e-7 g), no oracle
    return x * 0 + (x - x.detach()) * 1e-7


def _off_on_big_paddle(x):
    """One element a single ulp off (within rounding of the float64 truth) on every draw; values over 1e6 (the
    edge draw's big magnitudes) 1e-4 relative off below float64 -- inside 1e-2, far outside rounding."""
    import paddle

    a = x.numpy()
    if a.dtype == np.float64:
        return x * 1
    delta = np.zeros_like(a)
    delta.flat[0] = np.spacing(a.flat[0]) if np.isfinite(a.flat[0]) else 0
    big = np.isfinite(a) & (np.abs(a) > 1e6)
    delta[big] = a[big] * np.float32(1e-4)
    return x + paddle.to_tensor(delta)


register(
    Spec(api="apitester_test.zero_grad", paddle=_zero_grad_paddle, torch=_zero_grad_torch, signature=_stub),
    Spec(api="apitester_test.disputed_zero_grad", paddle=_zero_grad_paddle, torch=_disputed_grad_torch,
         signature=_stub),
    Spec(api="apitester_test.off_on_big", paddle=_off_on_big_paddle, torch=lambda x, **_: x * 1, signature=_stub,
         backward=False),
)
