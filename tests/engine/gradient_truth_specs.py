"""Test-only specs for the gradient truths of issue 44 (tests/engine/test_gradient_truths.py): real Paddle and
Torch functions where one side does what a real release did, by construction.

- ``logit_paddle_zero``: logit, with Paddle's gradient 0 outside (0, 1) as Paddle 3.0.0 gives it (Torch: NaN);
  its domain puts -0.5 (NaN there and all around) first;
- ``narrow_grad_paddle``: 2x, with a Paddle gradient cut to the first 3 columns (a [2, 3] gradient of a [2, 5]
  input);
- ``hardsigmoid_at_bound``: Paddle's hardsigmoid (its slope a float32 attribute: 0.2 is 0.2000000030) against
  clamp(x * slope + offset, 0, 1) at float64, with x = 2.5 on Torch's upper bound and past Paddle's.

Register by importing (tests) or with APITESTER_EXTRA_SPECS=gradient_truth_specs and this directory on PYTHONPATH."""
import numpy as np

from apitester.specs import base
from apitester.specs.base import Spec, register

_stub = lambda x: None  # noqa: E731  (one tensor x)


def _minus_half_first(ctx):
    """-0.5 (logit is NaN there and around), then values inside (0, 1) where logit is smooth."""
    count = int(np.prod(ctx.shape))
    values = np.array([-0.5] + [0.2 + 0.6 * k / max(count - 1, 1) for k in range(count - 1)])
    return values.reshape(ctx.shape).astype(ctx.dtype)


def _paddle_logit_zero_outside(x):
    import paddle

    class Logit(paddle.autograd.PyLayer):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return paddle.logit(t)

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensor()
            inside = (t > 0) & (t < 1)
            safe = paddle.where(inside, t, paddle.full_like(t, 0.5))
            return paddle.where(inside, g / (safe * (1 - safe)), paddle.zeros_like(g))

    return Logit.apply(x)


def _torch_logit(x, **_):
    import torch

    return torch.logit(x)


def _paddle_narrow_grad(x):
    import paddle

    class Narrow(paddle.autograd.PyLayer):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g[..., :3] * 2

    return Narrow.apply(x)


def _torch_double(x, **_):
    return x * 2


def _at_the_bound_first(ctx):
    """2.5 first (0.2 * 2.5 + 0.5 is exactly 1 at float64: hardsigmoid's upper bound; with a float32 slope of
    0.2000000030 it is past it), then values inside the bounds."""
    count = int(np.prod(ctx.shape))
    values = np.array([2.5] + [-1.0 + 2.0 * k / max(count - 1, 1) for k in range(count - 1)])
    return values.reshape(ctx.shape).astype(ctx.dtype)


def _paddle_hardsigmoid(x, slope=0.2, offset=0.5):
    import paddle

    return paddle.nn.functional.hardsigmoid(x, slope, offset)


def _torch_hardsigmoid(x, slope=0.2, offset=0.5, **_):
    import torch

    return torch.clamp(x * slope + offset, 0.0, 1.0)


SPECS = (
    Spec(api="apitester_truth.logit_paddle_zero", paddle=_paddle_logit_zero_outside, torch=_torch_logit,
         signature=_stub, domains={"x": _minus_half_first},
         note="test-only: logit whose Paddle gradient is 0 outside (0, 1) (Paddle 3.0.0), Torch's NaN"),
    Spec(api="apitester_truth.hardsigmoid_at_bound", paddle=_paddle_hardsigmoid, torch=_torch_hardsigmoid,
         signature=lambda x, slope=0.2, offset=0.5: None, domains={"x": _at_the_bound_first},
         note="test-only: Paddle's hardsigmoid (its slope a float32 attribute) with x on the float64 bound first"),
    Spec(api="apitester_truth.narrow_grad_paddle", paddle=_paddle_narrow_grad, torch=_torch_double, signature=_stub,
         note="test-only: 2x whose Paddle gradient keeps only the first 3 columns of its input's"),
)
if SPECS[0].api not in base.REGISTRY:  # imported under two names in one process: registered once
    register(*SPECS)
