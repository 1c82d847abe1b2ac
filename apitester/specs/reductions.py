"""Reductions, scans, sort, search, statistics."""

from __future__ import annotations

from ..inputs import axes
from .base import Spec, register, torch_dtype


def _dims(axis):
    import torch

    if isinstance(axis, torch.Tensor):  # a Tensor axis: its values are the dims
        axis = axis.tolist()
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(axis)
    return axis


def _sum(x, axis=None, dtype=None, keepdim=False, **_):
    import torch

    dims = _dims(axis)
    if dims is None or dims == ():
        # Paddle: axis None or [] reduces every dim
        dims = tuple(range(x.ndim))
    return torch.sum(x, dim=dims, keepdim=keepdim, dtype=torch_dtype(dtype))


def _cumsum(x, axis=None, dtype=None, **_):
    import torch

    if axis is None:  # Paddle flattens first
        x = x.reshape(-1)
        axis = 0
    return torch.cumsum(x, dim=axis, dtype=torch_dtype(dtype))


register(
    Spec(
        api="paddle.sum",
        aliases=("paddle.Tensor.sum",),
        torch=_sum,
        domains={"axis": axes(of="x")},
        note="torch.sum; Paddle's axis=None or [] reduces all dims",
    ),
    Spec(
        api="paddle.cumsum",
        aliases=("paddle.Tensor.cumsum",),
        torch=_cumsum,
        note="torch.cumsum; axis=None flattens first as Paddle does",
    ),
)
