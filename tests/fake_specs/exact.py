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
