"""paddle.linalg and matrix APIs."""

from __future__ import annotations

import numpy as np

from ..inputs import numpy_dtype
from .base import Spec, register


def cholesky_factor(upper: str = "upper"):
    """Domain: the Cholesky factor of a well-conditioned SPD matrix over the last two dims.

    Lower triangular, or upper when the argument named ``upper`` is True.
    """

    def domain(ctx):
        *batch, n, m = ctx.shape
        a = ctx.rng.uniform(-1, 1, (*batch, n, n))
        spd = a @ np.swapaxes(a, -1, -2) / max(n, 1) + np.eye(n)
        factor = np.linalg.cholesky(spd)
        if bool(ctx.args.get(upper, False)):
            factor = np.swapaxes(factor, -1, -2)
        return factor.astype(numpy_dtype(ctx.dtype))

    return domain


def _cholesky_solve(x, y, upper=False, **_):
    import torch

    return torch.cholesky_solve(x, y, upper=upper)


register(
    Spec(
        api="paddle.linalg.cholesky_solve",
        aliases=("paddle.cholesky_solve",),
        torch=_cholesky_solve,
        domains={"y": cholesky_factor()},
        note="y is a Cholesky factor (triangular, positive diagonal) of a well-conditioned SPD matrix",
    ),
)
