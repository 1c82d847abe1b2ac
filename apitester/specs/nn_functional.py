"""paddle.nn.functional APIs."""

from __future__ import annotations

from .base import Spec, register


def _hardsigmoid(x, slope=0.1666667, offset=0.5, **_):
    import torch

    # torch.nn.functional.hardsigmoid fixes slope=1/6; Paddle's is a parameter.
    return torch.clamp(x * slope + offset, 0.0, 1.0)


register(
    Spec(
        api="paddle.nn.functional.hardsigmoid",
        torch=_hardsigmoid,
        note="clamp(x*slope + offset, 0, 1) (torch's hardsigmoid has a fixed slope)",
    ),
)
