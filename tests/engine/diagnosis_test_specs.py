"""Test-only specs with a side that is off by construction (load with
APITESTER_EXTRA_SPECS=diagnosis_test_specs and this directory on PYTHONPATH, or import directly).

Each perturbation happens at float32 only -- at float64 both sides compute the true function -- so
the float64 oracle exists and the readings have a known answer."""
import numpy as np

from apitester.specs.base import _REGISTRY, KnownFailure, Spec, Ties
from apitester.specs.base import register as _register_all


def register(*specs: Spec) -> None:
    """Register once per process: this module is imported as ``diagnosis_test_specs`` (tests/engine, on sys.path)
    and as ``tests.engine.diagnosis_test_specs`` (APITESTER_EXTRA_SPECS, the board tests); the second import of it
    in one process registers nothing."""
    _register_all(*(spec for spec in specs if spec.api not in _REGISTRY))

_stub = lambda x: None  # noqa: E731  (one tensor x)


def _low(x) -> bool:
    """Is x below float64 (the precision where the constructed error is made)?"""
    return "float64" not in str(x.dtype)


def _paddle_tanh(x, scale=1.0):
    import paddle

    return paddle.tanh(x) * scale if _low(x) else paddle.tanh(x)


def _torch_tanh(x, scale=1.0):
    import torch

    return torch.tanh(x) * scale if _low(x) else torch.tanh(x)


def _paddle_matmul_off(x, y):
    import paddle

    out = paddle.matmul(x, y)
    return out * 1.05 if _low(x) else out


def _torch_matmul(x, y, **_):
    import torch

    return torch.matmul(x, y)


def _paddle_cancel(x):
    """(x + 1000) - 1000: exact at float64, rounded to float16's 0.5 spacing near 1000 at float16."""
    return (x + 1000.0) - 1000.0


def _large_and_one_small(ctx):
    """Fifteen values of 1000 and one of 0.3: an error at 0.3 is under one rounding unit at 1000."""
    values = np.full(ctx.shape, 1000.0)
    values.reshape(-1)[0] = 0.3
    return values.astype(ctx.dtype)


register(
    Spec(api="apitester_diag.paddle_off", paddle=lambda x: _paddle_tanh(x, 1.05),
         torch=lambda x, **_: _torch_tanh(x), signature=_stub, note="test-only: Paddle 5% off at float32"),
    Spec(api="apitester_diag.torch_off", paddle=lambda x: _paddle_tanh(x),
         torch=lambda x, **_: _torch_tanh(x, 1.05), signature=_stub, note="test-only: Torch 5% off at float32"),
    Spec(api="apitester_diag.both_off", paddle=lambda x: _paddle_tanh(x, 1.05),
         torch=lambda x, **_: _torch_tanh(x, 0.95), signature=_stub,
         note="test-only: Paddle 5% over, Torch 5% under at float32"),
    Spec(api="apitester_diag.within_rounding", paddle=_paddle_cancel, torch=lambda x, **_: x * 1.0,
         signature=_stub, domains={"x": _large_and_one_small}, backward=False,
         note="test-only: an error of 0.2 at 0.3 beside values of 1000 (float16)"),
    Spec(api="apitester_diag.int_off", paddle=lambda x: x + 1, torch=lambda x, **_: x, signature=_stub,
         note="test-only: integer output off by one"),
    Spec(api="apitester_diag.matmul_off", paddle=_paddle_matmul_off, torch=_torch_matmul,
         signature=lambda x, y: None, note="test-only: Paddle's matmul 5% off at float32"),
)


# ---------------------------------------------------------------- conventions (issue 34 item 4, ties item 7)

def _paddle_int32(x):
    import paddle

    return (x > 0).astype("int32")


def _torch_int64(x, **_):
    import torch

    return (x > 0).to(torch.int64)


def _paddle_raises(x):
    raise ValueError("x must be a matrix")


def _torch_raises(x, **_):
    raise RuntimeError("expected a matrix")


def _paddle_round_away(x):
    """Paddle's side rounds half away from zero (C's round), by construction."""
    import paddle

    return paddle.sign(x) * paddle.floor(paddle.abs(x) + 0.5)


def _torch_round(x, **_):
    import torch

    return torch.round(x)  # half to even


def _identity_coordinate(values, _args):
    return np.asarray(values, dtype=np.float64)


def _half_integers(dtype, _args):
    return [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5]


def _wide_range(ctx):
    return ctx.rng.uniform(-4.0, 4.0, ctx.shape).astype(ctx.dtype)


register(
    Spec(api="apitester_diag.dtype_convention", paddle=_paddle_int32, torch=_torch_int64, signature=_stub,
         backward=False, note="test-only: int32 (Paddle) vs int64 (Torch)"),
    Spec(api="apitester_diag.shape_convention", paddle=lambda x: x * 1.0, torch=lambda x, **_: x[:, None] * 1.0,
         signature=_stub, backward=False, note="test-only: (n,) (Paddle) vs (n, 1) (Torch)"),
    Spec(api="apitester_diag.paddle_raises", paddle=_paddle_raises, torch=lambda x, **_: x * 1.0,
         signature=_stub, backward=False, note="test-only: Paddle raises, Torch returns"),
    Spec(api="apitester_diag.torch_raises", paddle=lambda x: x * 1.0, torch=_torch_raises,
         signature=_stub, backward=False, note="test-only: Torch raises, Paddle returns"),
    Spec(api="apitester_diag.round_ties", paddle=_paddle_round_away, torch=_torch_round, signature=_stub,
         backward=False, domains={"x": _wide_range},
         ties=Ties("x", _identity_coordinate, _half_integers, note="test-only: round() of x"),
         note="test-only: Paddle rounds half away from zero, Torch half to even"),
)


# ---------------------------------------------------------------- known failures (issue 34 item 5)

register(
    Spec(api="apitester_diag.known_stale", paddle=lambda x: x * 2.0, torch=lambda x, **_: x * 2.0, signature=_stub,
         backward=False, note="test-only: declares a failure that does not happen",
         known_failures=(KnownFailure("accuracy_error", "test-only: fixed since", dtypes=("float32",),
                                     direction="forward"),
                         KnownFailure("paddle_error", "test-only: float16 only, never run here", dtypes=("float16",)))),
    Spec(api="apitester_diag.known_still", paddle=lambda x: _paddle_tanh(x, 1.05), torch=lambda x, **_: _torch_tanh(x),
         signature=_stub, backward=False, note="test-only: declares a failure that still happens",
         known_failures=(KnownFailure("accuracy_error", "test-only: Paddle 5% off", direction="forward"),)),
)
