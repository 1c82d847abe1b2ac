"""Signal-processing specs (paddle.signal.*)."""

from __future__ import annotations

from ..inputs import precondition
from .base import Spec, register, torch_call


@precondition("a positive window: near zero it violates the NOLA condition istft divides by")
def window_values(ctx):
    """Window samples in [0.1, 1): a window near zero everywhere violates the NOLA
    condition (the overlap-add envelope istft divides by), which both APIs reject or
    amplify into noise; real windows (hann, hamming, ...) are positive like these."""
    values = ctx.rng.uniform(0.1, 1.0, ctx.shape)
    return values.astype("float32" if ctx.dtype == "bfloat16" else ctx.dtype)


register(
    Spec(
        api="paddle.signal.istft",
        torch=torch_call("torch.istft", x="input"),
        domains={"window": window_values},
        # Every output sample is an inverse FFT of a whole frame: a 1e150 input puts float64 rounding of
        # ~1e134 into its neighbours, beyond any elementwise tolerance where they are small (seen as a
        # 1.08 relative difference next to a 5e151 value on the report config). Edges 0 and +-1 only.
        magnitudes=False,
        note="torch.istft with the same parameters (x -> input); the window is drawn "
        "positive so the overlap-add envelope is well conditioned.",
    ),
)
