"""Math & elementwise, creation & shape APIs."""

from __future__ import annotations

from ..inputs import int_range, unit_open
from .base import Spec, register, torch_dtype


def _clip(x, min=None, max=None, **_):
    import torch

    if min is None and max is None:
        return x.clone()
    # Paddle keeps x's dtype whatever the bounds' types are (torch would promote an int
    # tensor clamped by a float bound to float).
    return torch.clamp(x, min=min, max=max).to(x.dtype)


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
        note="torch.clamp; the result keeps x's dtype as Paddle documents",
    ),
    Spec(
        api="paddle.logit",
        aliases=("paddle.Tensor.logit",),
        torch=_logit,
        domains={"x": unit_open()},
        note="inputs in (0, 1), where logit is finite",
    ),
    Spec(
        api="paddle.maximum",
        aliases=("paddle.Tensor.maximum",),
        torch=lambda x, y, **_: __import__("torch").maximum(x, y),
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
        domains={"x": int_range(-65504, 65505)},
        note="Tensor.to(dtype); integer inputs span float16's range so rounding is exercised",
    ),
)
