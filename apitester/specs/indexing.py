"""Indexing, gather & scatter APIs."""

from __future__ import annotations

from ..inputs import indices
from .base import Spec, register

_SCATTER_REDUCE = {"add": "sum", "mul": "prod", "multiply": "prod", "mean": "mean", "amin": "amin", "amax": "amax"}


def _put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True, **_):
    import torch

    axis = axis % arr.ndim if arr.ndim else 0
    if not isinstance(values, torch.Tensor):
        values = torch.tensor(values, dtype=arr.dtype)
    if broadcast:
        # Paddle: broadcast indices to arr's shape with the axis dim taken from indices,
        # unless indices is larger than arr somewhere; values follow indices.
        if all(a >= i for a, i in zip(arr.shape, indices.shape)):
            shape = list(arr.shape)
            shape[axis] = indices.shape[axis]
            indices = indices.expand(shape)
        values = values.expand(indices.shape)
    elif values.numel() == 1:
        values = values.reshape([1] * indices.ndim).expand(indices.shape)
    values = values.to(arr.dtype)
    indices = indices.long()
    # scatter reads only the leading index-shaped block of values; slicing it makes
    # autograd give the rest a zero gradient (torch rejects a smaller index otherwise)
    if tuple(values.shape) != tuple(indices.shape):
        values = values[tuple(slice(0, s) for s in indices.shape)]
    if reduce == "assign":
        return torch.scatter(arr, axis, indices, values)
    return torch.scatter_reduce(arr, axis, indices, values, reduce=_SCATTER_REDUCE[reduce],
                                include_self=include_self)


register(
    Spec(
        api="paddle.put_along_axis",
        aliases=("paddle.Tensor.put_along_axis",),
        torch=_put_along_axis,
        # Distinct indices along each row: with "assign" the winner of a duplicate index is
        # unspecified in both frameworks.
        domains={"indices": indices(of="arr", axis="axis", unique=True)},
        note="torch.scatter / scatter_reduce after Paddle's broadcast rules",
    ),
)
