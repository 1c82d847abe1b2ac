"""Test-only specs for the float64 gradient check at edges (tests/engine/test_gradient_edges.py): real Paddle
and Torch functions at kinks and domain boundaries, and two "sinc" pairs where one side's gradient is NaN at 0
by construction (sin(x)/x differentiated naively: 0 * NaN through the where) while the other's is the true 0.

Register by importing (tests) or with APITESTER_EXTRA_SPECS=gradient_edge_specs and this directory on PYTHONPATH
(a `python -m apitester diagnose` process)."""
import numpy as np

from apitester.specs import base
from apitester.specs.base import Spec, register

_stub = lambda x: None  # noqa: E731  (one tensor x)


def _with_zero(ctx):
    """0 first, then values away from 0 (1, -1.5, 2, ...): the edge the check is about, and smooth points."""
    values = np.array([0.0] + [(1 + k / 2) * (-1) ** k for k in range(int(np.prod(ctx.shape)) - 1)])
    return values.reshape(ctx.shape).astype(ctx.dtype)


def _paddle_naive_sinc(x):
    import paddle

    safe = paddle.where(x == 0, paddle.ones_like(x), x)
    return paddle.where(x == 0, paddle.ones_like(x), paddle.sin(x) / x)


def _torch_naive_sinc(x, **_):
    import torch

    return torch.where(x == 0, torch.ones_like(x), torch.sin(x) / x)


def _paddle_sinc(x):
    import paddle

    safe = paddle.where(x == 0, paddle.ones_like(x), x)
    return paddle.where(x == 0, paddle.ones_like(x), paddle.sin(safe) / safe)


def _torch_sinc(x, **_):
    import torch

    return torch.sinc(x / np.pi)


def _paddle(name):
    def call(x):
        import paddle

        return {"relu": paddle.nn.functional.relu, "abs": paddle.abs, "sqrt": paddle.sqrt}[name](x)
    return call


def _torch(name):
    def call(x, **_):
        import torch

        return {"relu": torch.relu, "abs": torch.abs, "sqrt": torch.sqrt}[name](x)
    return call


def _paddle_double_off(x):
    """2x, with a gradient of 3 everywhere (wrong at every size)."""
    import paddle

    class Double(paddle.autograd.PyLayer):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Double.apply(x)


def _torch_double_off_when_small(x, **_):
    """2x, with the true gradient 2 on more than 2 elements and a wrong 4 on 2 or fewer: shrinking to one element
    keeps the strict failure (3 against 4) while neither side's gradient matches the derivative any more."""
    import torch

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.small = t.numel() <= 2
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * (4 if ctx.small else 2)

    return Double.apply(x)


def _torch_abs_plus_at_0(x, **_):
    """|x| whose gradient at 0 is +1 (the right derivative), where torch.abs and paddle.abs give 0: both subgradients."""
    import torch

    class Abs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t.abs()

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * torch.where(t >= 0, 1.0, -1.0).to(t.dtype)

    return Abs.apply(x)


SPECS = (
    *(Spec(api=f"apitester_diag.{name}_at_0", paddle=_paddle(name), torch=_torch(name), signature=_stub,
           domains={"x": _with_zero}, note=f"test-only: {name} with an exact 0 among its inputs")
      for name in ("relu", "abs", "sqrt")),
    Spec(api="apitester_diag.sinc_paddle_nan", paddle=_paddle_naive_sinc, torch=_torch_sinc, signature=_stub,
         domains={"x": _with_zero}, note="test-only: Paddle's gradient of sin(x)/x is NaN at 0, Torch's is 0"),
    Spec(api="apitester_diag.abs_subgradients", paddle=_paddle("abs"), torch=_torch_abs_plus_at_0, signature=_stub,
         domains={"x": _with_zero}, note="test-only: |x| with gradient 0 (Paddle) and +1 (Torch) at 0"),
    Spec(api="apitester_diag.double_paddle_off", paddle=_paddle_double_off, torch=_torch_double_off_when_small,
         signature=_stub, note="test-only: Paddle's gradient of 2x is 3; Torch's is 2, or 4 on at most 2 elements"),
    Spec(api="apitester_diag.sinc_torch_nan", paddle=_paddle_sinc, torch=_torch_naive_sinc, signature=_stub,
         domains={"x": _with_zero}, note="test-only: Torch's gradient of sin(x)/x is NaN at 0, Paddle's is 0"),
)
# A pytest process may import this file under two names (gradient_edge_specs from tests/engine, and
# tests.engine.gradient_edge_specs through APITESTER_EXTRA_SPECS): the registry takes each name once.
if SPECS[0].api not in base.REGISTRY:
    register(*SPECS)
