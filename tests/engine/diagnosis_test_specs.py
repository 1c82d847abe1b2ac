"""Test-only specs with a side that is off by construction (load with
APITESTER_EXTRA_SPECS=diagnosis_test_specs and this directory on PYTHONPATH, or import directly).

Each perturbation happens at float32 only -- at float64 both sides compute the true function -- so
the float64 oracle exists and the readings have a known answer."""
import numpy as np

from apitester.specs.base import REGISTRY, KnownFailure, Spec, Ties
from apitester.specs.base import register as _register_all


def register(*specs: Spec) -> None:
    """Register once per process: this module is imported as ``diagnosis_test_specs`` (tests/engine, on sys.path)
    and as ``tests.engine.diagnosis_test_specs`` (APITESTER_EXTRA_SPECS, the board tests); the second import of it
    in one process registers nothing."""
    _register_all(*(spec for spec in specs if spec.api not in REGISTRY))

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


# ---------------------------------------------------------------- sides wrong at every precision, and a reference
# (Spec.ref): the float64 pair disputes, or the config is float64 already, and only the independent
# reference can say which side computes the documented function.

import mpmath  # noqa: E402

from apitester.inputs import precondition  # noqa: E402
from apitester.references import mp_apply  # noqa: E402
from tests.fake_specs.engine import _torch_tanh_double_grad  # noqa: E402


def _ref_tanh(x, **_):
    return mp_apply(mpmath.tanh, x)


def _paddle_tanh_always(x, scale=1.0):
    import paddle

    return paddle.tanh(x) * scale


def _torch_tanh_always(x, scale=1.0):
    import torch

    return torch.tanh(x) * scale


@precondition("tiny values, where exp(x) - 1 cancels: the constructed float64 error lives there")
def _tiny(ctx):
    return (ctx.rng.uniform(-1.0, 1.0, ctx.shape) * 1e-9).astype(ctx.dtype)


@precondition("every fourth value exactly 0, where sin(x)/x is 0/0 unless taken as its limit 1")
def _with_zeros(ctx):
    values = ctx.rng.uniform(-1.0, 1.0, ctx.shape)
    values.reshape(-1)[::4] = 0.0
    return values.astype(ctx.dtype)


def _sinc_naive(x):
    return x.sin() / x  # NaN at 0 (0/0)


def _sinc_limit(x, **_):
    import torch

    return torch.where(x == 0, torch.ones_like(x), torch.sin(x) / x)


def _ref_sinc(x, **_):
    return mp_apply(lambda v: mpmath.mpf(1) if v == 0 else mpmath.sin(v) / v, x)


def _ref_not_covered(x, **_):
    raise NotImplementedError("the test reference covers nothing")


register(
    Spec(api="apitester_diag.ref_paddle_off", paddle=lambda x: _paddle_tanh_always(x, 1.05),
         torch=lambda x, **_: _torch_tanh_always(x), ref=_ref_tanh, signature=_stub, backward=False,
         note="test-only: Paddle 5% off tanh at every precision (the float64 pair disputes); ref mpmath tanh"),
    Spec(api="apitester_diag.ref_torch_off", paddle=lambda x: _paddle_tanh_always(x),
         torch=lambda x, **_: _torch_tanh_always(x, 1.05), ref=_ref_tanh, signature=_stub, backward=False,
         note="test-only: Torch 5% off tanh at every precision; ref mpmath tanh"),
    Spec(api="apitester_diag.ref_neither", paddle=lambda x: _paddle_tanh_always(x, 1.05),
         torch=lambda x, **_: _torch_tanh_always(x, 0.95), ref=_ref_tanh, signature=_stub, backward=False,
         note="test-only: both 5% off tanh at every precision, in opposite directions; ref mpmath tanh"),
    Spec(api="apitester_diag.ref_not_covered", paddle=lambda x: _paddle_tanh_always(x, 1.05),
         torch=lambda x, **_: _torch_tanh_always(x), ref=_ref_not_covered, signature=_stub, backward=False,
         note="test-only: a disputed pair whose reference raises NotImplementedError"),
    Spec(api="apitester_diag.expm1_naive", paddle=lambda x: x.exp() - 1.0,
         torch=lambda x, **_: x.expm1(), ref=lambda x, **_: mp_apply(mpmath.expm1, x), signature=_stub,
         domains={"x": _tiny}, backward=False,
         note="test-only: Paddle's side is exp(x) - 1 (cancels for tiny x, even at float64); ref mpmath expm1"),
    Spec(api="apitester_diag.sinc_naive", paddle=_sinc_naive, torch=_sinc_limit, ref=_ref_sinc, signature=_stub,
         domains={"x": _with_zeros}, backward=False,
         note="test-only: Paddle's side is sin(x)/x, NaN at 0 where the function's limit is 1; ref mpmath"),
    Spec(api="apitester_diag.sinc_both_naive", paddle=_sinc_naive, torch=lambda x, **_: _sinc_naive(x), ref=_ref_sinc,
         signature=_stub, domains={"x": _with_zeros}, backward=False,
         note="test-only: both sides sin(x)/x (NaN at 0, agreed at float64) where the function is 1"),
    Spec(api="apitester_diag.ref_torch_grad_off", paddle=lambda x: _paddle_tanh_always(x),
         torch=lambda x, **_: _torch_tanh_double_grad(x), ref=_ref_tanh, signature=_stub,
         note="test-only: Torch's tanh gradient doubled at every precision; ref mpmath tanh (its derivative)"),
    Spec(api="apitester_diag.sqrt_zero_fill", paddle=lambda x: x.sqrt(),
         torch=lambda x, **_: __import__("torch").sqrt(x.clamp(min=0)),
         ref=lambda x, **_: mp_apply(mpmath.sqrt, x), signature=_stub, backward=False,
         note="test-only: Torch's side gives sqrt(max(x, 0)): 0, finite, where sqrt of a negative is NaN"),
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


# ---- shapes that must agree (Spec.shapes_agree): y is one longer than x, as rnnt_loss's label is one shorter than
# its logits' U+1.  Every shape Paddle's side is called with is kept, so a test sees that no candidate breaking the
# relation ever ran.
PAIR_SHAPES_SEEN: list[tuple[tuple, tuple]] = []


def _paddle_pair_off(x, y):
    PAIR_SHAPES_SEEN.append((tuple(x.shape), tuple(y.shape)))
    return x * 1.5 + y[..., 1:] if _low(x) else x + y[..., 1:]


def _torch_pair(x, y):
    return x + y[..., 1:]


def _pair_shapes_agree(x=None, y=None, **_):
    if x is not None and y is not None and tuple(y) != (*x[:-1], x[-1] + 1):
        return f"y {list(y)} is not x {list(x)} with one more in its last dimension"
    return None


register(
    Spec(api="apitester_diag.pair_off", torch=_torch_pair, paddle=_paddle_pair_off, signature=lambda x, y: None,
         shapes_agree=_pair_shapes_agree, backward=False,
         note="test-only: y one longer than x; Paddle off by 1.5x at float32"),
)


# ---- an integer input cast to float16 (a reference sees past "integer inputs are exact"): 65519 rounds to 65504,
# the largest finite float16; values from 65520 on round to inf.  Paddle's side saturates early to inf, as
# Paddle 3.0.0's astype(int64 -> float16) did.
def _paddle_to_half_early_inf(x):
    import paddle

    wide = x.astype("float32")  # Paddle's CPU where has no float16 kernel
    return paddle.where(x >= 65505, paddle.full_like(wide, float("inf")), wide).astype("float16")


def _torch_to_half(x, **_):
    import torch

    return x.to(torch.float16)


def _ref_to_half(x, **_):
    return np.asarray(x, dtype=np.float64).astype(np.float16)


def _near_the_float16_limit(ctx):
    return np.array([65000, 65519, 65504, 1, -7, 65510][: int(np.prod(ctx.shape))], dtype=np.int64).reshape(ctx.shape)


register(
    Spec(api="apitester_diag.int_to_half", paddle=_paddle_to_half_early_inf, torch=_torch_to_half, ref=_ref_to_half,
         signature=_stub, domains={"x": _near_the_float16_limit}, backward=False,
         note="test-only: int64 -> float16, Paddle's side inf from 65505 on (the correctly rounded value is 65504)"),
)
