"""Math & elementwise, creation & shape APIs."""

from __future__ import annotations

from ..inputs import int_range, ties_with, wide
from .base import Spec, register, torch_dtype


def _clip(x, min=None, max=None, **_):
    import torch

    # Paddle treats tensor bounds as constants (clip sets min/max.stop_gradient = True):
    # no gradient flows to them.
    if isinstance(min, torch.Tensor):
        min = min.detach()
    if isinstance(max, torch.Tensor):
        max = max.detach()
    if min is None and max is None:
        return x.clone()
    return torch.clamp(x, min=min, max=max)


def _logit(x, eps=None, **_):
    import torch

    return torch.logit(x, eps=eps)


def _mul(x, y, **_):
    import torch

    return torch.mul(x, y)


def _cast(x, dtype, **_):
    return x.to(torch_dtype(dtype))


register(
    Spec(
        api="paddle.clip",
        aliases=("paddle.Tensor.clip",),
        torch=_clip,
        # The reported failures were range bugs (float64 clipped at float32's max): draw x
        # over the dtype's whole range so such bounds are exercised.
        domains={"x": wide()},
        note="torch.clamp with tensor bounds detached (Paddle gives them no gradient); x spans the dtype's range",
    ),
    Spec(
        api="paddle.logit",
        aliases=("paddle.Tensor.logit",),
        torch=_logit,
        note="torch.logit; inputs in [-1, 1) include the region outside (0, 1) where logit is NaN",
    ),
    Spec(
        api="paddle.maximum",
        aliases=("paddle.Tensor.maximum",),
        torch=lambda x, y, **_: __import__("torch").maximum(x, y),
        # Some elements equal: the reported failures are gradients at ties.
        domains={"y": ties_with("x")},
        note="torch.maximum; 10% of y ties with x to exercise the tie gradient",
    ),
    Spec(
        api="paddle.Tensor.__mul__",
        aliases=("paddle.Tensor.mul", "paddle.multiply", "paddle.Tensor.multiply"),
        torch=_mul,
        signature=lambda x, y: None,
        note="x * y; Tensor.__mul__ is a builtin without an inspectable signature",
    ),
    Spec(
        api="paddle.cast",
        aliases=("paddle.Tensor.astype", "paddle.Tensor.cast"),
        torch=_cast,
        # Values over the whole float16 range make rounding (not just exact small ints) count.
        # PaddleAPITest's integer range: crosses float16's max, so rounding and overflow count.
        domains={"x": int_range(-65535, 65535)},
        note="Tensor.to(dtype); integer inputs in [-65535, 65535) as in PaddleAPITest",
    ),
)
